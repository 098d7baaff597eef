package leadershipfx_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
)

// TestRole_F1_WithoutModule is the DESIGN snippet without
// leadershipfx.Module: the roles elect once started and release on stop,
// with the lock from lockingfx.Module or supplied some other way.
func TestRole_F1_WithoutModule(t *testing.T) {
	for _, withLockingfx := range []bool{true, false} {
		t.Run(map[bool]string{true: "lockingfx.Module", false: "lock supplied"}[withLockingfx], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				core, _ := observer.New(zapcore.InfoLevel)
				lock := []fx.Option{env(), lockingfx.Module}
				if !withLockingfx {
					lock = []fx.Option{supplyLock(memLock(t))}
				}
				var got twoRoles
				app := fxtest.New(t,
					fx.Options(lock...),
					fx.Supply(zap.New(core)),
					leadershipfx.Role("reports"),
					leadershipfx.Role("billing"),
					fx.Populate(&got),
				)
				got.leadThenRelease(t, app, func() {})
			})
		})
	}
}

// TestRole_E11_WithoutModule: a reader attached through the role's
// Handle ends, its cleanup included, while the lease is still held; only
// then is the lease released.
func TestRole_E11_WithoutModule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		var heldAtEnd atomic.Int32 // 1 held, 2 released
		started := make(chan struct{})
		app := fxtest.New(t, supplyLock(lock),
			leadershipfx.Role("billing"),
			fx.Invoke(fx.Annotate(func(h *leadershipfx.Handle) error {
				return h.Go("orders", func(ctx context.Context) {
					close(started)
					<-ctx.Done()
					time.Sleep(3 * time.Second) // cleanup that outlasts StopWarnAfter
					if held(t, lock, "billing") {
						heldAtEnd.Store(1)
					} else {
						heldAtEnd.Store(2)
					}
				})
			}, fx.ParamTags(`name:"billing"`))),
		)
		app.RequireStart()
		<-started
		synctest.Wait()
		if !held(t, lock, "billing") {
			t.Fatal("billing not led after start")
		}
		app.RequireStop()
		if got := heldAtEnd.Load(); got != 1 {
			t.Fatalf("when the reader ended the lease was %s, want still held (E11)", map[int32]string{0: "never checked", 2: "already released"}[got])
		}
		if held(t, lock, "billing") {
			t.Fatal("lease still held after stop")
		}
	})
}

// TestRole_T2_WithoutModuleFailsStart: the composition check runs in the
// role's own OnStart hook; the elector never starts.
func TestRole_T2_WithoutModuleFailsStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b leadership.Leadership
		app := fx.New(fx.NopLogger, env("HOSTLOOM_LEADERSHIP__ROLES__BILLING__LEASE=90s", "HOSTLOOM_LOCKING__MAX_LEASE=1m"),
			lockingfx.Module, leadershipfx.Role("billing"), fx.Populate(fx.Annotate(&b, fx.ParamTags(`name:"billing"`))))
		if err := app.Err(); err != nil {
			t.Fatalf("fx.New: %v", err)
		}
		err := app.Start(context.Background())
		if want := `leadership: role "billing": lease 1m30s exceeds locking max_lease 1m0s`; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Start error %v, want %q", err, want)
		}
		synctest.Wait()
		if b.IsLeader() {
			t.Fatal("the elector started despite the failed check")
		}
		_ = app.Stop(context.Background())
	})
}

// TestRole_O4_UndeclaredOverride: an override for a role the app does
// not declare fails fx.New naming the key, its source and the declared
// roles, with and without Module.
func TestRole_O4_UndeclaredOverride(t *testing.T) {
	for _, withModule := range []bool{false, true} {
		t.Run(map[bool]string{false: "without Module", true: "with Module"}[withModule], func(t *testing.T) {
			opts := []fx.Option{fx.NopLogger, env("HOSTLOOM_LEADERSHIP__ROLES__BILING__LEASE=20s"), lockingfx.Module,
				leadershipfx.Role("billing"), leadershipfx.Role("reports")}
			if withModule {
				opts = append(opts, leadershipfx.Module)
			}
			err := fx.New(opts...).Err()
			if err == nil {
				t.Fatal("fx.New succeeded")
			}
			msg := err.Error()
			for _, want := range []string{"leadership.roles.biling", "HOSTLOOM_LEADERSHIP__ROLES__BILING__LEASE", `"billing", "reports"`} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
			if strings.Contains(msg, "could not build") || strings.Count(msg, "leadership.roles.biling") != 1 {
				t.Errorf("not HostLoom's error alone, once: %s", msg)
			}
		})
	}
}
