package config_test

import (
	"testing"
	"time"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/scheduling"
)

func TestConverters_DefaultsMatchCore(t *testing.T) {
	c := config.Defaults()
	if got, want := c.Leadership.Options("billing"), leadership.DefaultOptions(); got != want {
		t.Errorf("Leadership.Options = %+v, want leadership.DefaultOptions() %+v", got, want)
	}
	if got, want := c.LeaderChannel.Options(), leadership.DefaultChannelOptions(); got != want {
		t.Errorf("LeaderChannel.Options = %+v, want leadership.DefaultChannelOptions() %+v", got, want)
	}
	if loc, err := c.Scheduling.Location.Load(); err != nil || loc != time.UTC || c.Scheduling.MisfireWindow != scheduling.DefaultMisfireWindow {
		t.Errorf("Scheduling: location %v (%v), misfire window %v", loc, err, c.Scheduling.MisfireWindow)
	}
}

func TestConverters_RoleOverridesAndEnums(t *testing.T) {
	c, err := config.Load(writeFile(t, fullYAML), config.WithEnviron(nil))
	if err != nil {
		t.Fatal(err)
	}
	billing := c.Leadership.Options("billing")
	want := leadership.Options{Lease: 40 * time.Second, RenewInterval: 10 * time.Second, RetryInterval: time.Second,
		WhenUncoordinated: leadership.Follow, LockKeyFormat: "x:{role}", LockKey: "billing-exact",
		SafetyMargin: time.Second, Balance: false, Priority: -3}
	if billing != want {
		t.Errorf("Options(billing) = %+v, want %+v", billing, want)
	}
	other := c.Leadership.Options("other")
	if other.Lease != 20*time.Second || other.WhenUncoordinated != leadership.Lead || other.LockKeyFormat != "election:eu:{role}" ||
		other.SafetyMargin != 100*time.Millisecond || !other.Balance || other.Priority != 2 {
		t.Errorf("Options(other) = %+v", other)
	}
	if ch := c.LeaderChannel.Options(); ch.FullMode != leadership.DropOldest || ch.Capacity != 8 || !ch.DrainOnLoss || ch.DropReportInterval != time.Minute {
		t.Errorf("LeaderChannel.Options = %+v", ch)
	}
	lo := c.Locking.Options()
	if lo.Disabled || lo.Namespace != "billing" || !lo.UseHashTags || lo.MaxKeyLength != 256 || lo.MaxLease != time.Minute || lo.MaxHold != 30*time.Minute {
		t.Errorf("Locking.Options = %+v", lo)
	}
	for _, tt := range []struct {
		provider config.ProviderName
		want     bool
	}{{config.ProviderMemory, true}, {config.ProviderRedis, true}, {config.ProviderDisabled, false}} {
		l := config.LockingConfig{Provider: tt.provider}
		if l.Options().Disabled == tt.want || l.Coordinated() != tt.want {
			t.Errorf("provider=%s: Options().Disabled=%t, want %t (L4)", tt.provider, l.Options().Disabled, !tt.want)
		}
	}
	for _, m := range []leadership.FullMode{leadership.Wait, leadership.DropWrite, leadership.DropNewest, leadership.DropOldest} {
		c, err := config.Load("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory", "HOSTLOOM_LEADER_CHANNEL__FULL_MODE=" + m.String()}))
		if err != nil {
			t.Fatal(err)
		}
		if o := c.LeaderChannel.Options(); o.FullMode != m || o.Validate() != nil {
			t.Errorf("full_mode %s loads as %v", m, o.FullMode)
		}
	}
	for _, w := range []leadership.WhenUncoordinated{leadership.Follow, leadership.Lead} {
		c, err := config.Load("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory", "HOSTLOOM_LEADERSHIP__ROLES__X__WHEN_UNCOORDINATED=" + w.String()}))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Leadership.Options("x").WhenUncoordinated; got != w {
			t.Errorf("when_uncoordinated %s loads as %v", w, got)
		}
	}
}
