package lockbuild_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hostloom/hostloom/backends/redis/redislockbuild"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/locking/redislock"
)

func memoryConfig() config.LockingConfig {
	cfg := config.Defaults().Locking
	cfg.Provider = config.ProviderMemory
	return cfg
}

// TestBuild_G6_NoProviderNamesTheKey: a configuration without a provider
// is refused naming locking.provider.
func TestBuild_G6_NoProviderNamesTheKey(t *testing.T) {
	if _, err := lockbuild.Build(config.LockingConfig{}); err == nil || !strings.Contains(err.Error(), "locking.provider: is not set") {
		t.Fatalf("Build(zero config) = %v", err)
	}
}

// section is the keys of testBackend: locking.<name>.*.
type section struct {
	Shards int `koanf:"shards"`
}

func (s *section) Validate(keys config.SectionKeys) []*config.FieldError {
	if s.Shards < 1 {
		return []*config.FieldError{keys.Errorf("shards", "%d must be positive", s.Shards)}
	}
	return nil
}

// testBackend is a backend of this test: its provider is memlock, its
// section has one key, and it records what Build saw and Close closed.
type testBackend struct {
	name   config.ProviderName
	shards *int
	closed *int
}

func (b testBackend) Provider() config.ProviderName { return b.name }
func (b testBackend) Section() config.Section       { return &section{Shards: 1} }
func (b testBackend) Build(cfg config.LockingConfig) (lockbuild.Provided, error) {
	*b.shards = cfg.Section(b.name).(*section).Shards
	return lockbuild.Provided{Provider: memlock.New(), Close: func() error { *b.closed++; return nil }}, nil
}

// TestBuild_X1_BackendByName: a backend given to Load and Build is
// selected by its name; its section is decoded, defaulted and checked by
// Load; its Close runs once at Built.Close.
func TestBuild_X1_BackendByName(t *testing.T) {
	var shards, closed int
	be := testBackend{name: "sharded", shards: &shards, closed: &closed}
	cfg, err := config.Load("", lockbuild.LoadOption(be), config.WithEnviron([]string{
		"HOSTLOOM_LOCKING__PROVIDER=sharded", "HOSTLOOM_LOCKING__SHARDED__SHARDS=4"}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := lockbuild.Build(cfg.Locking, lockbuild.WithBackends(be))
	if err != nil {
		t.Fatal(err)
	}
	if b.Kind != "sharded" || shards != 4 || !b.Lock.Coordinated() {
		t.Fatalf("kind %s, shards %d, coordinated %t", b.Kind, shards, b.Lock.Coordinated())
	}
	if err := errors.Join(b.Close(), b.Close()); err != nil || closed != 1 {
		t.Fatalf("Close: %v, closed %d times", err, closed)
	}
	_, err = config.Load("", lockbuild.LoadOption(be), config.WithEnviron([]string{
		"HOSTLOOM_LOCKING__PROVIDER=sharded", "HOSTLOOM_LOCKING__SHARDED__SHARDS=0", "HOSTLOOM_LOCKING__SHARDED__SHARTS=2"}))
	for _, want := range []string{
		"config: locking.sharded.sharts: unknown key (env HOSTLOOM_LOCKING__SHARDED__SHARTS)",
		"config: locking.sharded.shards: 0 must be positive (env HOSTLOOM_LOCKING__SHARDED__SHARDS)",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load error %v, want it to contain %q", err, want)
		}
	}
}

// TestBuild_X1_LoadedBackendNotGivenToBuild: a configuration loaded with
// a backend that Build is not given is an error naming locking.provider,
// not a panic.
func TestBuild_X1_LoadedBackendNotGivenToBuild(t *testing.T) {
	var n int
	cfg, err := config.Load("", lockbuild.LoadOption(testBackend{name: "sharded", shards: &n, closed: &n}),
		config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=sharded"}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := lockbuild.Build(cfg.Locking)
	want := `config: locking.provider: "sharded" was loaded with its backend, which Build was not given (lockbuild.WithBackends) (env HOSTLOOM_LOCKING__PROVIDER)`
	if b != nil || err == nil || err.Error() != want {
		t.Fatalf("Build = %v, %v; want %q", b, err, want)
	}
}

// TestWithBackends_X1_RefusesBuiltInNamesAndDuplicates: a backend cannot
// replace memory or disabled, nor be given twice; a provider no backend
// serves names the providers linked.
func TestWithBackends_X1_RefusesBuiltInNamesAndDuplicates(t *testing.T) {
	var n int
	for _, tc := range []struct {
		opt  lockbuild.Option
		want string
	}{
		{lockbuild.WithBackends(testBackend{name: config.ProviderMemory, shards: &n, closed: &n}), `lockbuild: backend "memory" (lockbuild_test.testBackend): a provider Build knows itself`},
		{lockbuild.WithBackends(testBackend{name: "x", shards: &n, closed: &n}, testBackend{name: "x", shards: &n, closed: &n}), `lockbuild: backend "x" given twice`},
	} {
		b, err := lockbuild.Build(memoryConfig(), tc.opt)
		if b != nil || err == nil || err.Error() != tc.want {
			t.Errorf("Build = %v, %v; want %q", b, err, tc.want)
		}
	}
	cfg := memoryConfig()
	cfg.Provider = "etcd"
	_, err := lockbuild.Build(cfg, lockbuild.WithBackends(testBackend{name: "sharded", shards: &n, closed: &n}))
	if want := `config: locking.provider: "etcd" is not one of memory, redis, sharded, disabled (the providers this program links)`; err == nil || err.Error() != want {
		t.Errorf("Build(etcd) = %v, want %q", err, want)
	}
}

// TestBuild_L4_DisabledGrantsEveryone: provider disabled is the disabled
// kind with no provider.
func TestBuild_L4_DisabledGrantsEveryone(t *testing.T) {
	cfg := memoryConfig()
	cfg.Provider = config.ProviderDisabled
	b, err := lockbuild.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Kind != config.ProviderDisabled || b.Provider != nil || b.Lock.Coordinated() {
		t.Fatalf("kind %s, provider %v, coordinated %t", b.Kind, b.Provider, b.Lock.Coordinated())
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestBuild_X1_RedisLinkedByDefault: provider redis is the library
// module's own backend: a configuration loaded with no backend option
// builds the redislock provider over a client from locking.redis, without
// WithBackends and without contacting the server; given explicitly
// (with Load and Build) it is the same provider, registered once.
func TestBuild_X1_RedisLinkedByDefault(t *testing.T) {
	env := []string{"HOSTLOOM_LOCKING__PROVIDER=redis", "HOSTLOOM_LOCKING__REDIS__ADDRS=127.0.0.1:1",
		"HOSTLOOM_LOCKING__REDIS__PASSWORD=hunter2-build"}
	for _, tc := range []struct {
		name string
		load []config.LoadOption
		opts []lockbuild.Option
	}{
		{"default", nil, nil},
		{"explicit", []config.LoadOption{lockbuild.LoadOption(redislockbuild.Backend{})},
			[]lockbuild.Option{lockbuild.WithBackends(redislockbuild.Backend{})}},
		{"explicit to Build only", nil, []lockbuild.Option{lockbuild.WithBackends(redislockbuild.Backend{})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Load("", append(tc.load, config.WithEnviron(env))...)
			if err != nil {
				t.Fatal(err)
			}
			b, err := lockbuild.Build(cfg.Locking, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if _, ok := b.Provider.(*redislock.Provider); b.Kind != config.ProviderRedis || !ok || !b.HasCheck() {
				t.Fatalf("kind %s, provider %T, check %t; want redis over *redislock.Provider with a start check", b.Kind, b.Provider, b.HasCheck())
			}
			if got := fmt.Sprint(cfg.Locking.Providers()); got != "[memory redis disabled]" {
				t.Errorf("Providers() = %s, want redis once", got)
			}
		})
	}
	// A configuration built in code needs no backend either; without
	// addrs its client cannot be built, which names the key.
	_, err := lockbuild.Build(config.LockingConfig{Provider: config.ProviderRedis})
	if err == nil || !strings.Contains(err.Error(), "locking.redis.addrs: provider redis needs at least one host:port address") {
		t.Errorf("Build(redis, no addrs) = %v, want the missing locking.redis.addrs", err)
	}
}
