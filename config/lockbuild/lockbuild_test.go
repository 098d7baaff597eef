package lockbuild_test

import (
	"strings"
	"testing"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking"
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

// TestWithProvider_RefusesBuiltInNamesAndNil: the built-in providers
// cannot be replaced and a nil ProviderFunc is an error naming the
// provider; Build fails before building anything.
func TestWithProvider_RefusesBuiltInNamesAndNil(t *testing.T) {
	noop := func(config.LockingConfig) (locking.Provider, func() error, error) { return nil, nil, nil }
	for _, tc := range []struct {
		opt  lockbuild.Option
		want string
	}{
		{lockbuild.WithProvider(config.ProviderMemory, noop), `lockbuild: WithProvider("memory"): a provider Build knows itself`},
		{lockbuild.WithProvider(config.ProviderDisabled, noop), `lockbuild: WithProvider("disabled"): a provider Build knows itself`},
		{lockbuild.WithProvider("postgres", nil), `lockbuild: WithProvider("postgres"): nil ProviderFunc`},
	} {
		b, err := lockbuild.Build(memoryConfig(), tc.opt)
		if b != nil || err == nil || err.Error() != tc.want {
			t.Errorf("Build = %v, %v; want %q", b, err, tc.want)
		}
	}
}

// TestBuild_L4_DisabledGrantsEveryone: enabled false is the disabled kind
// with no provider, whatever provider is named.
func TestBuild_L4_DisabledGrantsEveryone(t *testing.T) {
	cfg := memoryConfig()
	cfg.Enabled = false
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
