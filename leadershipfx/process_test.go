package leadershipfx_test

import (
	"context"
	"errors"
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

// Balance over the memory lock cannot see other processes: said once at
// Warn when the app's process is built (B1, H1). (Moved from lockingfx,
// which no longer provides the balance group.)
func TestRole_B1_BalanceOverMemoryWarns(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	app := fxtest.New(t,
		env("HOSTLOOM_LEADERSHIP__BALANCE=true"),
		fx.Supply(zap.New(core)),
		lockingfx.Module,
		leadershipfx.Role("billing"),
		leadershipfx.Role("reports"),
	)
	app.RequireStart().RequireStop()
	if n := logs.FilterMessage("HostLoomBalanceMemoryLock").Len(); n != 1 {
		t.Fatalf("HostLoomBalanceMemoryLock logged %d times, want 1", n)
	}
}

// appLifecycle is an app's own decoration of fx.Lifecycle: it counts the
// hooks appended through it.
type appLifecycle struct {
	fx.Lifecycle
	n *int
}

func (l appLifecycle) Append(h fx.Hook) { *l.n++; l.Lifecycle.Append(h) }

// TestRoles_O3_A3_AppDecoratesLifecycle: an app that decorates
// fx.Lifecycle at the root builds, with lockingfx.Module and
// leadershipfx.Module; its roles append their hooks through the app's
// lifecycle, lead once started and release at stop.
func TestRoles_O3_A3_AppDecoratesLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		appended := 0
		var got twoRoles
		app := fxtest.New(t,
			fx.Decorate(func(lc fx.Lifecycle) fx.Lifecycle { return appLifecycle{Lifecycle: lc, n: &appended} }),
			env(), lockingfx.Module,
			leadershipfx.Role("reports"),
			leadershipfx.Role("billing"),
			leadershipfx.Module,
			fx.Populate(&got),
		)
		got.leadThenRelease(t, app, func() {
			if appended < 2 {
				t.Fatalf("%d hooks appended through the app's lifecycle, want the roles' at least", appended)
			}
		})
	})
}

// TestRoles_O3_LaterRootHookFailsReleasesBeforeStartReturns: roles
// declared before a root-level hook start first; when that hook fails,
// fx stops them, and their leases are released by the time Start returns
// (O3', H2), with leadershipfx.Module and without.
func TestRoles_O3_LaterRootHookFailsReleasesBeforeStartReturns(t *testing.T) {
	for _, withModule := range []bool{false, true} {
		t.Run(map[bool]string{false: "without Module", true: "with Module"}[withModule], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lock := memLock(t)
				var heldInHook bool
				var got twoRoles
				module := fx.Options()
				if withModule {
					module = leadershipfx.Module
				}
				app := fx.New(fx.NopLogger, supplyLock(lock),
					leadershipfx.Role("billing"),
					leadershipfx.Role("reports"),
					module,
					fx.Populate(&got),
					fx.Invoke(func(lc fx.Lifecycle) {
						lc.Append(fx.Hook{OnStart: func(context.Context) error {
							time.Sleep(time.Second)
							heldInHook = held(t, lock, "billing") && held(t, lock, "reports")
							return errors.New("listen tcp :8080: bind: address already in use")
						}})
					}),
				)
				if err := app.Err(); err != nil {
					t.Fatal(err)
				}
				err := app.Start(context.Background())
				if err == nil || err.Error() != "listen tcp :8080: bind: address already in use" {
					t.Fatalf("Start: %v, want the hook's error", err)
				}
				// No synctest.Wait: released by the time Start returned.
				if !heldInHook {
					t.Fatal("the roles declared before the hook did not lead while it ran")
				}
				if held(t, lock, "billing") || held(t, lock, "reports") || got.Billing.IsLeader() || got.Reports.IsLeader() {
					t.Fatal("a role still held after the failed Start returned")
				}
			})
		})
	}
}

// TestRoles_O3_WithoutModuleInFxOrder: fx.New with only a lock and
// leadershipfx.Role works; a root hook declared before the role runs
// before it contends, one declared after it finds it leading.
func TestRoles_O3_WithoutModuleInFxOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		var before, after []bool
		hook := func(into *[]bool) fx.Option {
			return fx.Invoke(func(lc fx.Lifecycle) {
				lc.Append(fx.Hook{OnStart: func(context.Context) error {
					synctest.Wait()
					*into = append(*into, held(t, lock, "billing"))
					return nil
				}})
			})
		}
		var e *leadership.Elector
		app := fxtest.New(t, supplyLock(lock),
			hook(&before),
			leadershipfx.Role("billing"),
			hook(&after),
			fx.Populate(fx.Annotate(&e, fx.ParamTags(`name:"billing"`))),
		)
		app.RequireStart()
		if len(before) != 1 || before[0] || len(after) != 1 || !after[0] {
			t.Fatalf("held in the hook before the role %v, after it %v: want [false] and [true]", before, after)
		}
		app.RequireStop()
		if held(t, lock, "billing") || e.IsLeader() {
			t.Fatal("billing held after stop")
		}
	})
}

// TestRoles_H1_OneProcessPerApp: every role of an app shares one
// identity (leadership.identity) and one process, which Roles exposes.
func TestRoles_H1_OneProcessPerApp(t *testing.T) {
	var roles *leadershipfx.Roles
	var got twoRoles
	app := fxtest.New(t, env("HOSTLOOM_LEADERSHIP__IDENTITY=node-7"), lockingfx.Module,
		leadershipfx.Role("billing"), leadershipfx.Role("reports"), leadershipfx.Module,
		fx.Populate(&roles, &got))
	p := roles.Process()
	if p == nil || p.Identity() != "node-7" {
		t.Fatalf("process %v", p)
	}
	for _, e := range got.All {
		if e.Identity() != "node-7" {
			t.Errorf("%s: identity %q", e.Role(), e.Identity())
		}
	}
	if es := p.Electors(); len(es) != 2 {
		t.Fatalf("the process has %d electors, want 2", len(es))
	}
	app.RequireStart().RequireStop()
}
