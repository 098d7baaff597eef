package config_test

import (
	"strings"
	"testing"

	"github.com/hostloom/hostloom/config"
)

// named is a backend with a name and a section of any type, to test what
// Load accepts as a backend.
type named struct {
	name    config.ProviderName
	section config.Section
}

func (n named) Provider() config.ProviderName { return n.name }
func (n named) Section() config.Section       { return n.section }

// badSection is not a pointer to a struct.
type badSection map[string]any

func (badSection) Validate(config.SectionKeys) []*config.FieldError { return nil }

// TestWithBackends_X1_RefusesBadBackends: a backend whose name is not a
// plain lower-case word, is reserved (memory, disabled, a key of the
// locking section) or given twice, or whose section is not a pointer to
// a struct, fails Load naming it.
func TestWithBackends_X1_RefusesBadBackends(t *testing.T) {
	for _, tt := range []struct {
		backends []config.Backend
		want     string
	}{
		{[]config.Backend{named{name: "Etcd"}}, `config: backend "Etcd" (config_test.named): want lower-case letters`},
		{[]config.Backend{named{name: "memory"}}, `config: backend "memory" (config_test.named): the name is reserved`},
		{[]config.Backend{named{name: "namespace"}}, `config: backend "namespace" (config_test.named): the name is reserved`},
		{[]config.Backend{named{name: "x"}, named{name: "x"}}, `config: backend "x" given twice`},
		{[]config.Backend{named{name: "x", section: badSection{}}}, `config: backend "x": Section returns config_test.badSection, want a pointer to a struct or nil`},
	} {
		c, err := config.Load("", config.WithBackends(tt.backends...), config.WithEnviron(memory))
		if c != nil || err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Load = %v, %v; want %q", c, err, tt.want)
		}
	}
	// A backend without keys is selectable; keys under its name are unknown.
	_, err := config.Load("", config.WithBackends(named{name: "plain"}), config.WithEnviron([]string{
		"HOSTLOOM_LOCKING__PROVIDER=plain", "HOSTLOOM_LOCKING__PLAIN__X=1"}))
	if want := "config: locking.plain.x: unknown key (env HOSTLOOM_LOCKING__PLAIN__X)"; err == nil || err.Error() != want {
		t.Errorf("Load = %v, want %q", err, want)
	}
	// A backend's section written as a value is an error naming it.
	_, err = config.Load("", config.WithBackends(named{name: "plain", section: &oneKey{}}), config.WithEnviron([]string{
		"HOSTLOOM_LOCKING__PROVIDER=plain", "HOSTLOOM_LOCKING__PLAIN=3"}))
	if want := "config: locking.plain: is a section, not a value: got \"3\" (env HOSTLOOM_LOCKING__PLAIN)"; err == nil || err.Error() != want {
		t.Errorf("Load = %v, want %q", err, want)
	}
}

// oneKey is a section with one key, n.
type oneKey struct {
	N int `koanf:"n"`
}

func (*oneKey) Validate(config.SectionKeys) []*config.FieldError { return nil }
