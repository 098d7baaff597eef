package config

import (
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/scheduling/policy"
)

// Config is the whole HostLoom configuration. Every field carries the koanf
// key it is loaded from; Defaults returns the documented defaults.
type Config struct {
	// Locking is the lock backend and its limits.
	Locking LockingConfig `koanf:"locking"`
	// Leadership is the election timing and keys, per role.
	Leadership LeadershipConfig `koanf:"leadership"`
	// LeaderChannel holds the defaults of leader channels.
	LeaderChannel LeaderChannelConfig `koanf:"leader_channel"`
	// Scheduling holds the settings of the schedulers.
	Scheduling SchedulingConfig `koanf:"scheduling"`

	src sources
}

// Source reports where the value of the dotted key came from, as errors
// name it: "file app.yaml", "env HOSTLOOM_LEADERSHIP__LEASE", "yaml
// embedded" or "default". For a section (leadership.roles.billing) it
// names every source of the keys below it. It is "" for a configuration
// built in code rather than by Load.
func (c *Config) Source(key string) string { return c.src.of(key) }

// LockingConfig is the locking section: which backend, and the limits of
// locking.Options.
type LockingConfig struct {
	// Provider is memory, disabled, or the name of a backend the program
	// registered (WithBackends), such as redis or postgres. Required:
	// there is no default, so a replica never falls back to a lock of its
	// own by accident (G6).
	Provider ProviderName `koanf:"provider" required:"true"`
	// Namespace prefixes every provider key. Default "".
	Namespace string `koanf:"namespace"`
	// UseHashTags wraps the namespace in braces for Redis Cluster.
	// Default false.
	UseHashTags bool `koanf:"use_hash_tags"`
	// MaxKeyLength bounds consumer keys, in bytes. Default 512.
	MaxKeyLength int `koanf:"max_key_length"`
	// MaxLease caps every lease. Default 5m.
	MaxLease time.Duration `koanf:"max_lease"`
	// MaxHold bounds automatic extension by locking.Acquire. Default 1h.
	MaxHold time.Duration `koanf:"max_hold"`
	src     sources
	// backends are the registered backends (WithBackends), in order.
	backends []Backend
	// sections are the registered backends' sections, by provider name.
	sections map[ProviderName]Section
}

// Source reports where the value of the dotted key (locking.redis.password)
// came from; see Config.Source.
func (l LockingConfig) Source(key string) string { return l.src.of(key) }

// Coordinated reports whether the section selects a lock that coordinates:
// a provider other than disabled.
func (l LockingConfig) Coordinated() bool {
	return l.Provider != ProviderDisabled
}

// Options returns the locking.Options the section describes: provider
// disabled yields Disabled true.
func (l LockingConfig) Options() locking.Options {
	return locking.Options{
		Disabled:     !l.Coordinated(),
		Namespace:    l.Namespace,
		UseHashTags:  l.UseHashTags,
		MaxKeyLength: l.MaxKeyLength,
		MaxLease:     l.MaxLease,
		MaxHold:      l.MaxHold,
	}
}

// LeadershipConfig is the leadership section: the election timing and
// keys for every role, with per-role overrides under roles.<role>.
type LeadershipConfig struct {
	// Lease is how long an acquisition or renewal holds. Default 15s.
	Lease time.Duration `koanf:"lease"`
	// RenewInterval is the leader's renewal cadence, at most Lease/2.
	// Default 5s.
	RenewInterval time.Duration `koanf:"renew_interval"`
	// RetryInterval is the candidate's cadence. Default 2s.
	RetryInterval time.Duration `koanf:"retry_interval"`
	// SafetyMargin shortens each local term to allow for clock drift
	// (G4); 0 means Lease/100 + 2ms. At least 0 and below RenewInterval.
	// Default 0.
	SafetyMargin time.Duration `koanf:"safety_margin"`
	// WhenUncoordinated is follow or lead. Default follow.
	WhenUncoordinated leadership.WhenUncoordinated `koanf:"when_uncoordinated"`
	// LockKeyFormat names the key, with {role}. Default "leader:{role}".
	LockKeyFormat string `koanf:"lock_key_format"`
	// LockKey is the exact key (no expansion) of one role: For sets it
	// from the role's leadership.roles.<role>.lock_key. It has no
	// section-wide key, since one exact key cannot serve several roles.
	LockKey string `koanf:"-"`
	// Identity is stored with the lease and reported as the holder.
	// Default "" (hostname:pid).
	Identity string `koanf:"identity"`
	// Balance spreads the balanced roles of the namespace evenly over the
	// live instances (B1). Default false.
	Balance bool `koanf:"balance"`
	// Priority ranks this instance among a role's participants: higher
	// wins a free role and preempts a lower one cooperatively (B2). It
	// must fit in an int32. Default 0.
	Priority int `koanf:"priority"`
	// Roles holds per-role overrides, keyed by role name.
	Roles map[string]RoleOverrides `koanf:"roles" mapkey:"role"`

	src sources
}

// Source reports where the value of the dotted key
// (leadership.roles.billing.lease) came from; see Config.Source.
func (l LeadershipConfig) Source(key string) string { return l.src.of(key) }

// RoleOverrides are leadership.roles.<role>: each set field replaces the
// section-wide value for that role. A nil field keeps the section-wide
// value.
type RoleOverrides struct {
	// Lease overrides LeadershipConfig.Lease.
	Lease *time.Duration `koanf:"lease"`
	// RenewInterval overrides LeadershipConfig.RenewInterval.
	RenewInterval *time.Duration `koanf:"renew_interval"`
	// RetryInterval overrides LeadershipConfig.RetryInterval.
	RetryInterval *time.Duration `koanf:"retry_interval"`
	// SafetyMargin overrides LeadershipConfig.SafetyMargin.
	SafetyMargin *time.Duration `koanf:"safety_margin"`
	// WhenUncoordinated overrides LeadershipConfig.WhenUncoordinated.
	WhenUncoordinated *leadership.WhenUncoordinated `koanf:"when_uncoordinated"`
	// LockKeyFormat overrides LeadershipConfig.LockKeyFormat.
	LockKeyFormat *string `koanf:"lock_key_format"`
	// LockKey is the role's exact key, used literally instead of the
	// format. It has no section-wide default. Default "".
	LockKey *string `koanf:"lock_key" default:"\"\""`
	// Balance overrides LeadershipConfig.Balance.
	Balance *bool `koanf:"balance"`
	// Priority overrides LeadershipConfig.Priority.
	Priority *int `koanf:"priority"`
}

// For returns the settings for role: the section-wide values with the
// role's overrides applied. The result has no Roles.
func (l LeadershipConfig) For(role string) LeadershipConfig {
	r := l
	r.Roles = nil
	o, ok := l.Roles[role]
	if !ok {
		return r
	}
	set(&r.Lease, o.Lease)
	set(&r.RenewInterval, o.RenewInterval)
	set(&r.RetryInterval, o.RetryInterval)
	set(&r.SafetyMargin, o.SafetyMargin)
	set(&r.WhenUncoordinated, o.WhenUncoordinated)
	set(&r.LockKeyFormat, o.LockKeyFormat)
	set(&r.LockKey, o.LockKey)
	set(&r.Balance, o.Balance)
	set(&r.Priority, o.Priority)
	return r
}

// set replaces *dst with *override when the override is set.
func set[T any](dst *T, override *T) {
	if override != nil {
		*dst = *override
	}
}

// Options returns the leadership.Options for role: For(role) in the
// leadership package's terms.
func (l LeadershipConfig) Options(role string) leadership.Options {
	r := l.For(role)
	return leadership.Options{
		Lease:             r.Lease,
		RenewInterval:     r.RenewInterval,
		RetryInterval:     r.RetryInterval,
		WhenUncoordinated: r.WhenUncoordinated,
		LockKeyFormat:     r.LockKeyFormat,
		LockKey:           r.LockKey,
		SafetyMargin:      r.SafetyMargin,
		Balance:           r.Balance,
		Priority:          r.Priority,
	}
}

// LeaderChannelConfig is the leader_channel section: defaults for every
// leadership.Channel built from config.
type LeaderChannelConfig struct {
	// Capacity is the buffer size, in items. Default 1024.
	Capacity int `koanf:"capacity"`
	// FullMode is wait, drop_write, drop_newest or drop_oldest. Default wait.
	FullMode leadership.FullMode `koanf:"full_mode"`
	// DrainOnLoss discards buffered items when leadership ends. Default false.
	DrainOnLoss bool `koanf:"drain_on_loss"`
	// DropReportInterval is the least time between two drop summaries in
	// the log; 0 logs every drop. Default 1m.
	DropReportInterval time.Duration `koanf:"drop_report_interval"`
}

// Options returns the leadership.ChannelOptions the section describes.
func (c LeaderChannelConfig) Options() leadership.ChannelOptions {
	return leadership.ChannelOptions{
		Capacity:           c.Capacity,
		FullMode:           c.FullMode,
		DrainOnLoss:        c.DrainOnLoss,
		DropReportInterval: c.DropReportInterval,
	}
}

// SchedulingConfig is the scheduling section: settings of the schedulers
// built from config (schedulingfx.SchedulerOptions turns it into
// scheduling.Option values).
type SchedulingConfig struct {
	// Location is the time zone of cron expressions that name none.
	// Default UTC, so replicas in different zones agree on every slot.
	Location TimeZone `koanf:"location"`
	// MisfireWindow is how old a slot nobody started may be for a new
	// leader to still run it; 0 disables catching up. Needs SlotStore.
	// Default 1m.
	MisfireWindow time.Duration `koanf:"misfire_window"`
	// SlotStore records each started slot in the lock's state store so a
	// slot starts at most once across replicas (L8). Default true.
	SlotStore bool `koanf:"slot_store"`
	// Jobs holds per-job settings the deployment decides, keyed by job
	// name; each replaces what the code chose for every job of that name.
	Jobs map[string]JobOverrides `koanf:"jobs" mapkey:"job"`

	src sources
}

// Defaults returns the configuration used for every key no source sets:
// the defaults of the core packages. It names no locking.provider, so it
// does not validate as it is: Load fails unless a source chooses one (G6).
func Defaults() *Config {
	lo := locking.DefaultOptions()
	ld := leadership.DefaultOptions()
	co := leadership.DefaultChannelOptions()
	return &Config{
		Locking: LockingConfig{
			Namespace:    lo.Namespace,
			UseHashTags:  lo.UseHashTags,
			MaxKeyLength: lo.MaxKeyLength,
			MaxLease:     lo.MaxLease,
			MaxHold:      lo.MaxHold,
		},
		Leadership: LeadershipConfig{
			Lease:             ld.Lease,
			RenewInterval:     ld.RenewInterval,
			RetryInterval:     ld.RetryInterval,
			SafetyMargin:      ld.SafetyMargin,
			WhenUncoordinated: ld.WhenUncoordinated,
			LockKeyFormat:     ld.LockKeyFormat,
			LockKey:           ld.LockKey,
			Balance:           ld.Balance,
			Priority:          ld.Priority,
		},
		LeaderChannel: LeaderChannelConfig{
			Capacity:           co.Capacity,
			FullMode:           co.FullMode,
			DrainOnLoss:        co.DrainOnLoss,
			DropReportInterval: co.DropReportInterval,
		},
		Scheduling: SchedulingConfig{
			Location:      "UTC",
			MisfireWindow: policy.DefaultMisfireWindow,
			SlotStore:     true,
		},
	}
}
