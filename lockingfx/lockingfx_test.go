package lockingfx_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/lockingfx"
)

type provided struct {
	fx.In
	Lock     locking.Lock
	DLock    *locking.DistributedLock
	Provider locking.Provider
}

func TestModule_G6_NoProviderFailsStart(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []fx.Option
		want []string
	}{
		{"no configuration in the graph", nil,
			[]string{"lockingfx: the graph has no config.LockingConfig", "config: locking.provider: is not set: choose memory, redis, disabled"}},
		{"configuration without provider", []fx.Option{configfx.Supply(config.Defaults())},
			[]string{"config: locking.provider: is not set: choose memory, redis, disabled"}},
		{"loaded configuration without provider", []fx.Option{configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LEADERSHIP__LEASE=20s"}))},
			[]string{"config: locking.provider: is not set: choose memory, redis, disabled (memory coordinates this process only) (not set in env HOSTLOOM_LOCKING__PROVIDER)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			app := fx.New(append([]fx.Option{fx.NopLogger, lockingfx.Module, fx.Invoke(func(locking.Lock) {})}, tt.opts...)...)
			err := app.Err()
			if err == nil {
				t.Fatal("fx.New succeeded without a provider")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
		})
	}
}

func TestModule_G6_MemoryWhenChosenWarnsOnce(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	var got provided
	fxtest.New(t,
		configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory"})),
		lockingfx.Module,
		fx.Supply(zap.New(core)),
		fx.Populate(&got),
	).RequireStart().RequireStop()
	if _, ok := got.Provider.(*memlock.Provider); !ok {
		t.Fatalf("provider %T, want *memlock.Provider", got.Provider)
	}
	if got.Lock != locking.Lock(got.DLock) || !got.Lock.Coordinated() {
		t.Fatalf("lock %T coordinated=%t", got.Lock, got.Lock.Coordinated())
	}
	if got.DLock.MaxLease() != locking.DefaultMaxLease {
		t.Errorf("max lease %v", got.DLock.MaxLease())
	}
	ctx := context.Background()
	if _, err := got.Lock.TryAcquire(ctx, "k", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := got.Lock.TryAcquire(ctx, "k", time.Second); !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("second acquire: %v, want ErrNotAcquired", err)
	}
	warns := logs.FilterLevelExact(zapcore.WarnLevel).All()
	if len(warns) != 1 || warns[0].Message != "HostLoomLockMemory" {
		t.Fatalf("warnings %v, want one HostLoomLockMemory", warns)
	}
	if f := warns[0].ContextMap(); f["coordinates"] != "the electors of this process only" || f["source"] != "env HOSTLOOM_LOCKING__PROVIDER" {
		t.Errorf("warning fields %v", f)
	}
}

func TestModule_L4_DisabledGrantsEveryone(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  []string
	}{
		{"provider disabled", []string{"HOSTLOOM_LOCKING__PROVIDER=disabled"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got provided
			fxtest.New(t, configfx.Module("", config.WithEnviron(tt.env)), lockingfx.Module, fx.Populate(&got)).RequireStart().RequireStop()
			if got.Lock.Coordinated() || got.Provider != nil {
				t.Fatalf("coordinated=%t provider=%v, want a lock that grants everyone", got.Lock.Coordinated(), got.Provider)
			}
			ctx := context.Background()
			for range 2 {
				if _, err := got.Lock.TryAcquire(ctx, "k", time.Second); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// shards is the section of the backend below: locking.sharded.*.
type shards struct {
	Count int `koanf:"count"`
}

func (s *shards) Validate(keys config.SectionKeys) []*config.FieldError {
	if s.Count < 1 {
		return []*config.FieldError{keys.Errorf("count", "%d must be positive", s.Count)}
	}
	return nil
}

// sharded is a backend of a module of its own, as lockingfx sees one: a
// name, a section and a builder (over memlock here, so the test needs no
// server).
type sharded struct{ built *int }

func (sharded) Provider() config.ProviderName { return "sharded" }
func (sharded) Section() config.Section       { return &shards{Count: 1} }
func (b sharded) Build(cfg config.LockingConfig) (lockbuild.Provided, error) {
	*b.built = cfg.Section("sharded").(*shards).Count
	return lockbuild.Provided{Provider: memlock.New()}, nil
}

// TestModule_X1_BackendOfItsOwnModule: a backend added with
// lockingfx.Backend is selected by locking.provider, its keys load (and
// are checked) through configfx.Module, and New builds the lock over it;
// without it, the same configuration names the provider unknown.
func TestModule_X1_BackendOfItsOwnModule(t *testing.T) {
	env := []string{"HOSTLOOM_LOCKING__PROVIDER=sharded", "HOSTLOOM_LOCKING__SHARDED__COUNT=3"}
	var count int
	var got provided
	fxtest.New(t,
		configfx.Module("", config.WithEnviron(env)),
		lockingfx.Module,
		lockingfx.Backend(sharded{built: &count}),
		fx.Populate(&got),
	).RequireStart().RequireStop()
	if _, ok := got.Provider.(*memlock.Provider); !ok || count != 3 {
		t.Fatalf("provider %T built with count %d, want the backend's with 3", got.Provider, count)
	}
	bad := fx.New(fx.NopLogger,
		configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=sharded", "HOSTLOOM_LOCKING__SHARDED__COUNT=0"})),
		lockingfx.Module,
		lockingfx.Backend(sharded{built: &count}),
		fx.Invoke(func(locking.Lock) {}),
	)
	if err := bad.Err(); err == nil || !strings.Contains(err.Error(), "config: locking.sharded.count: 0 must be positive (env HOSTLOOM_LOCKING__SHARDED__COUNT)") {
		t.Errorf("count 0: %v", err)
	}
	without := fx.New(fx.NopLogger,
		configfx.Module("", config.WithEnviron(env)),
		lockingfx.Module,
		fx.Invoke(func(locking.Lock) {}),
	)
	for _, want := range []string{
		`config: locking.provider: "sharded" is not one of memory, redis, disabled (the providers this program links) (env HOSTLOOM_LOCKING__PROVIDER)`,
		"config: locking.sharded.count: unknown key (env HOSTLOOM_LOCKING__SHARDED__COUNT)",
	} {
		if err := without.Err(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("without the backend: %v, want %q", err, want)
		}
	}
}
