package etcdlockbuild_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/backends/etcd/etcdlockbuild"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
)

func load(env ...string) (*config.Config, error) {
	return config.Load("", lockbuild.LoadOption(etcdlockbuild.Backend{}),
		config.WithEnviron(append([]string{"HOSTLOOM_LOCKING__PROVIDER=etcd"}, env...)))
}

func TestEtcd_N1_LoadFromFileAndEnvWithDefaults(t *testing.T) {
	file := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(file, []byte("locking:\n  provider: etcd\n  etcd:\n    endpoints: [\"10.0.0.1:2379\", \"https://10.0.0.2:2379\"]\n    username: svc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file, lockbuild.LoadOption(etcdlockbuild.Backend{}), config.WithEnviron([]string{
		"HOSTLOOM_LOCKING__ETCD__PASSWORD=hunter2",
	}))
	if err != nil {
		t.Fatal(err)
	}
	e := etcdlockbuild.SectionOf(cfg.Locking)
	if cfg.Locking.Provider != etcdlockbuild.Name || len(e.Endpoints) != 2 || e.Username != "svc" || e.Password.Value() != "hunter2" {
		t.Fatalf("provider %q section %v", cfg.Locking.Provider, e)
	}
	if e.Prefix != etcdlock.DefaultPrefix || e.DialTimeout != 5*time.Second || e.TLS.Enabled {
		t.Errorf("defaults: %v", e)
	}
	if got := cfg.Source("locking.etcd.password"); got != "env HOSTLOOM_LOCKING__ETCD__PASSWORD" {
		t.Errorf("source %q", got)
	}
}

// TestEtcd_N5_ExpiryQuarantineReachesTheProvider: locking.etcd.expiry_quarantine
// is off by default, and turned on from the environment it reaches the
// provider's options; a value that is not a bool names the key.
func TestEtcd_N5_ExpiryQuarantineReachesTheProvider(t *testing.T) {
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if etcdlockbuild.SectionOf(cfg.Locking).ProviderOptions().ExpiryQuarantine {
		t.Fatal("expiry_quarantine on by default")
	}
	cfg, err = load("HOSTLOOM_LOCKING__ETCD__EXPIRY_QUARANTINE=true")
	if err != nil {
		t.Fatal(err)
	}
	if !etcdlockbuild.SectionOf(cfg.Locking).ProviderOptions().ExpiryQuarantine {
		t.Fatal("HOSTLOOM_LOCKING__ETCD__EXPIRY_QUARANTINE=true did not reach the provider's options")
	}
	_, err = load("HOSTLOOM_LOCKING__ETCD__EXPIRY_QUARANTINE=sometimes")
	if err == nil || !strings.Contains(err.Error(), "locking.etcd.expiry_quarantine") || !strings.Contains(err.Error(), "sometimes") {
		t.Fatalf("a bad expiry_quarantine: %v; want an error naming the key and the value", err)
	}
}

func TestEtcd_N1_PasswordNeverPrinted(t *testing.T) {
	e := etcdlockbuild.Config{Endpoints: []string{"h:2379"}, Username: "svc", Password: "hunter2", Prefix: "p/"}
	j, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{e.String(), fmt.Sprintf("%v %+v %#v %s", e, e, e, e), string(j)} {
		if strings.Contains(s, "hunter2") {
			t.Errorf("password printed: %s", s)
		}
		if !strings.Contains(s, "[redacted]") {
			t.Errorf("no [redacted] in %s", s)
		}
	}
}

func TestEtcd_N1_BadValuesNameKeyValueAndSource(t *testing.T) {
	tests := []struct {
		env  string
		key  string
		want string
	}{
		{"HOSTLOOM_LOCKING__ETCD__ENDPOINTS=db1", "locking.etcd.endpoints", `"db1" is not host:port`},
		{"HOSTLOOM_LOCKING__ETCD__ENDPOINTS=unix://x:1", "locking.etcd.endpoints", `scheme "unix"`},
		{"HOSTLOOM_LOCKING__ETCD__ENDPOINTS=h:0", "locking.etcd.endpoints", `port "0"`},
		{"HOSTLOOM_LOCKING__ETCD__PREFIX=app\tlocks/", "locking.etcd.prefix", `"app\tlocks/": control character`},
		{"HOSTLOOM_LOCKING__ETCD__PREFIX=" + strings.Repeat("p", 257), "locking.etcd.prefix", "257 bytes, at most 256"},
		{"HOSTLOOM_LOCKING__ETCD__DIAL_TIMEOUT=0s", "locking.etcd.dial_timeout", "0s must be positive"},
		{"HOSTLOOM_LOCKING__ETCD__DIAL_TIMEOUT=5", "locking.etcd.dial_timeout", `"5"`},
		{"HOSTLOOM_LOCKING__ETCD__USERNAME=svc", "locking.etcd.username", `"svc" is set without a password`},
		{"HOSTLOOM_LOCKING__ETCD__PASSWORD=hunter2", "locking.etcd.password", "is set without a username"},
		{"HOSTLOOM_LOCKING__ETCD__TLS__CERT_FILE=c.pem", "locking.etcd.tls.cert_file", "set both or neither"},
		{"HOSTLOOM_LOCKING__ETCD__NOPE=1", "locking.etcd.nope", ""},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			_, err := load(tt.env)
			if err == nil {
				t.Fatal("Load accepted " + tt.env)
			}
			var fe *config.FieldError
			if !errors.As(err, &fe) || fe.Key != tt.key {
				t.Fatalf("error %v: want a FieldError for %s", err, tt.key)
			}
			name, _, _ := strings.Cut(tt.env, "=")
			for _, w := range []string{tt.key, tt.want, "env " + name} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestEtcd_N1_SectionCheckedOnlyForEtcd(t *testing.T) {
	_, err := config.Load("", lockbuild.LoadOption(etcdlockbuild.Backend{}), config.WithEnviron([]string{
		"HOSTLOOM_LOCKING__PROVIDER=memory", "HOSTLOOM_LOCKING__ETCD__DIAL_TIMEOUT=0s"}))
	if err != nil {
		t.Fatalf("provider memory: locking.etcd is not used, yet: %v", err)
	}
}

// TestEtcd_N1_MissingTLSFileFailsBuildNamingKeyAndPath: a TLS file that
// does not exist fails the build (start) naming the key and the path.
func TestEtcd_N1_MissingTLSFileFailsBuildNamingKeyAndPath(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "ca.pem")
	for _, c := range []struct{ env, key string }{
		{"HOSTLOOM_LOCKING__ETCD__TLS__CA_FILE=" + missing, "locking.etcd.tls.ca_file"},
		{"HOSTLOOM_LOCKING__ETCD__TLS__CERT_FILE=" + missing, "locking.etcd.tls.cert_file"},
	} {
		env := []string{"HOSTLOOM_LOCKING__ETCD__ENDPOINTS=127.0.0.1:2379", c.env}
		if strings.Contains(c.env, "CERT_FILE") {
			env = append(env, "HOSTLOOM_LOCKING__ETCD__TLS__KEY_FILE="+missing+".key")
		}
		cfg, err := load(env...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = lockbuild.Build(cfg.Locking, lockbuild.WithBackends(etcdlockbuild.Backend{}))
		var fe *config.FieldError
		if !errors.As(err, &fe) || fe.Key != c.key || !strings.Contains(err.Error(), missing) {
			t.Fatalf("Build with %s = %v, want a FieldError naming %s and the path", c.env, err, c.key)
		}
	}
}

// TestEtcd_N1_NoEndpointsFailsBuild: without endpoints and without a
// client of the app's, the build fails naming the key.
func TestEtcd_N1_NoEndpointsFailsBuild(t *testing.T) {
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockbuild.Build(cfg.Locking, lockbuild.WithBackends(etcdlockbuild.Backend{}))
	if err == nil || !strings.Contains(err.Error(), "locking.etcd.endpoints") {
		t.Fatalf("Build without endpoints = %v, want an error naming locking.etcd.endpoints", err)
	}
}

// TestEtcd_N1_EndpointWithCredentialsRefusedRedacted: an endpoint URL
// carrying a user and password is refused, naming the keys to use
// instead; the error shows the URL with its password redacted.
func TestEtcd_N1_EndpointWithCredentialsRefusedRedacted(t *testing.T) {
	_, err := load("HOSTLOOM_LOCKING__ETCD__ENDPOINTS=https://svc:hunter2@h:2379")
	var fe *config.FieldError
	if !errors.As(err, &fe) || fe.Key != "locking.etcd.endpoints" {
		t.Fatalf("error %v: want a FieldError for locking.etcd.endpoints", err)
	}
	for _, w := range []string{`"https://svc:xxxxx@h:2379"`, "carries credentials", "locking.etcd.password", "env HOSTLOOM_LOCKING__ETCD__ENDPOINTS"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the password shows: %v", err)
	}
}
