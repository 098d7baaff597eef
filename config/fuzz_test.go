package config_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/hostloom/hostloom/config"
)

// FuzzLoad feeds arbitrary YAML to Load: it must never panic, must return
// either a config or an error (not both), and every problem must name its
// key and source (or be a YAML error of the document); the password set
// through the environment never shows in an error.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		fullYAML,
		"locking:\n  provider: memory\n",
		"locking:\n  provider: memory\nleadership:\n  safety_margin: 1s\n  priority: 7\n  roles:\n    a:\n      balance: true\n",
		"",
		"leadership:\n  lease: 20s\n",
		"leadership:\n  roles:\n    billing:\n      lease: 1m\n",
		"leadership:\n  roles:\n",
		"locking:\n  redis:\n    addrs: a:1,b:2\n",
		"locking: 3\n",
		"- a\n- b\n",
		"a: {1: 2}\n",
		"leadership.lease: 3s\n",
		"locking:\n  max_key_length: 99999999999999999999\n",
		"scheduling:\n  location: \"\"\n",
	} {
		f.Add([]byte(s))
	}
	const pw = "Fz-pw-7c1d0e"
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := config.Load("", config.WithYAML("fuzz", doc), config.WithEnviron([]string{"HOSTLOOM_LOCKING__REDIS__PASSWORD=" + pw}))
		if err != nil && !bytes.Contains(doc, []byte(pw)) && strings.Contains(err.Error(), pw) {
			t.Fatalf("error shows the password: %v", err)
		}
		if (c == nil) == (err == nil) {
			t.Fatalf("Load returned config %v and error %v", c, err)
		}
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("loaded config fails Validate: %v", verr)
			}
			// What Load accepts, the core packages accept.
			if verr := c.LeaderChannel.Options().Validate(); verr != nil {
				t.Fatalf("leader_channel accepted by Load, refused by the core: %v", verr)
			}
			if verr := c.Locking.Options().Validate(); verr != nil {
				t.Fatalf("locking accepted by Load, refused by the core: %v", verr)
			}
			for role := range c.Leadership.Roles {
				if verr := c.Leadership.Options(role).Validate(); verr != nil {
					t.Fatalf("role %q accepted by Load, refused by the core: %v", role, verr)
				}
			}
			if _, verr := c.Scheduling.Location.Load(); verr != nil {
				t.Fatalf("scheduling accepted by Load, refused: %v", verr)
			}
			return
		}
		parts := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			parts = j.Unwrap()
		}
		for _, p := range parts {
			var fe *config.FieldError
			switch {
			case errors.As(p, &fe):
				if fe.Reason == "" || fe.Key == "" || fe.Source == "" {
					t.Fatalf("FieldError without its key, source or reason: %#v", fe)
				}
			case strings.HasPrefix(p.Error(), "config: yaml fuzz: "):
			default:
				t.Fatalf("error names no key: %q", p)
			}
		}
	})
}
