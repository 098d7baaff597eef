package config_test

import (
	"testing"
	"time"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
)

func TestConverters_DefaultsMatchCore(t *testing.T) {
	c := config.Defaults()
	if got, want := c.Leadership.Options("billing"), leadership.DefaultOptions(); got != want {
		t.Errorf("Leadership.Options = %+v, want leadership.DefaultOptions() %+v", got, want)
	}
	if got, want := c.LeaderChannel.Options(), leadership.DefaultChannelOptions(); got != want {
		t.Errorf("LeaderChannel.Options = %+v, want leadership.DefaultChannelOptions() %+v", got, want)
	}
	opts, err := c.Scheduling.Options()
	if err != nil || len(opts) != 2 {
		t.Errorf("Scheduling.Options = %v, %v", opts, err)
	}
}

func TestConverters_RoleOverridesAndEnums(t *testing.T) {
	c, err := config.Load(writeFile(t, fullYAML), config.WithEnviron(nil))
	if err != nil {
		t.Fatal(err)
	}
	billing := c.Leadership.Options("billing")
	want := leadership.Options{Lease: 40 * time.Second, RenewInterval: 10 * time.Second, RetryInterval: time.Second,
		WhenUncoordinated: leadership.Follow, LockKeyFormat: "x:{role}", LockKey: "billing-exact"}
	if billing != want {
		t.Errorf("Options(billing) = %+v, want %+v", billing, want)
	}
	other := c.Leadership.Options("other")
	if other.Lease != 20*time.Second || other.WhenUncoordinated != leadership.Lead || other.LockKeyFormat != "election:eu:{role}" {
		t.Errorf("Options(other) = %+v", other)
	}
	if ch := c.LeaderChannel.Options(); ch.FullMode != leadership.DropOldest || ch.Capacity != 8 || !ch.DrainOnLoss || ch.DropReportInterval != time.Minute {
		t.Errorf("LeaderChannel.Options = %+v", ch)
	}
	lo := c.Locking.Options()
	if !lo.Enabled || lo.Namespace != "billing" || !lo.UseHashTags || lo.MaxKeyLength != 256 || lo.MaxLease != time.Minute || lo.MaxHold != 30*time.Minute {
		t.Errorf("Locking.Options = %+v", lo)
	}
	for _, tt := range []struct {
		enabled  bool
		provider config.Provider
		want     bool
	}{{true, config.ProviderMemory, true}, {true, config.ProviderRedis, true}, {true, config.ProviderDisabled, false}, {false, config.ProviderMemory, false}} {
		l := config.Locking{Enabled: tt.enabled, Provider: tt.provider}
		if l.Options().Enabled != tt.want || l.Coordinated() != tt.want {
			t.Errorf("enabled=%t provider=%s: Options().Enabled=%t, want %t (L4)", tt.enabled, tt.provider, l.Options().Enabled, tt.want)
		}
	}
	for _, m := range []config.FullMode{config.FullWait, config.FullDropWrite, config.FullDropNewest, config.FullDropOldest} {
		o := config.LeaderChannel{Capacity: 1, FullMode: m}.Options()
		if o.FullMode.String() != string(m) {
			t.Errorf("FullMode %q converts to %v", m, o.FullMode)
		}
	}
}
