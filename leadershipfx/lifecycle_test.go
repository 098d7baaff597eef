package leadershipfx_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
)

func memLock(t *testing.T) *locking.DistributedLock {
	t.Helper()
	l, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func supplyLock(l *locking.DistributedLock) fx.Option {
	return fx.Supply(fx.Annotate(l, fx.As(new(locking.Lock))))
}

func held(t *testing.T, l *locking.DistributedLock, role string) bool {
	t.Helper()
	_, ok, err := l.Holder(context.Background(), "leader:"+role)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestRoles_O3_ContendOnlyAfterEveryStartHook: the elector has not
// contended while an OnStart hook appended before the role runs; when
// that hook fails the instance never leads. With leadershipfx.Module, and
// in the package example's composition without it (lockingfx.Module
// before the role). The app's hook is declared before the role: roles
// start in fx's order (O3').
func TestRoles_O3_ContendOnlyAfterEveryStartHook(t *testing.T) {
	compositions := []struct {
		name string
		// lock returns the options that provide the lock, setting *lock
		// once it is built; last goes at the end of fx.New.
		lock func(t *testing.T, lock **locking.DistributedLock) fx.Option
		last fx.Option
	}{
		{"leadershipfx.Module last", func(t *testing.T, lock **locking.DistributedLock) fx.Option {
			*lock = memLock(t)
			return supplyLock(*lock)
		}, leadershipfx.Module},
		{"lockingfx.Module without leadershipfx.Module", func(_ *testing.T, lock **locking.DistributedLock) fx.Option {
			return fx.Options(env(), lockingfx.Module, fx.Populate(lock))
		}, fx.Options()},
	}
	for _, c := range compositions {
		for _, fail := range []bool{false, true} {
			t.Run(c.name+"/"+map[bool]string{false: "later hook succeeds", true: "later hook fails"}[fail], func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var lock *locking.DistributedLock
					var heldInHook bool
					var billing leadership.Leadership
					app := fx.New(fx.NopLogger, c.lock(t, &lock),
						fx.Populate(fx.Annotate(&billing, fx.ParamTags(`name:"billing"`))),
						fx.Invoke(func(lc fx.Lifecycle) {
							lc.Append(fx.Hook{OnStart: func(context.Context) error {
								time.Sleep(time.Minute)
								heldInHook = held(t, lock, "billing")
								if fail {
									return errors.New("later hook failed")
								}
								return nil
							}})
						}),
						leadershipfx.Role("billing"),
						c.last,
					)
					if err := app.Err(); err != nil {
						t.Fatal(err)
					}
					err := app.Start(context.Background())
					if fail != (err != nil) {
						t.Fatalf("Start: %v", err)
					}
					synctest.Wait()
					if heldInHook {
						t.Fatal("the role contended before a later OnStart hook returned")
					}
					if billing.IsLeader() == fail || billing.Term() != map[bool]uint64{false: 1, true: 0}[fail] {
						t.Fatalf("leader=%t term=%d after a start that failed=%t", billing.IsLeader(), billing.Term(), fail)
					}
					if err := app.Stop(context.Background()); err != nil && !fail {
						t.Fatalf("Stop: %v", err)
					}
					if held(t, lock, "billing") {
						t.Fatal("billing held after the app stopped")
					}
				})
			})
		}
	}
}

// TestRoles_O2_StuckReaderKeepsOnlyItsRole: a reader of billing that
// ignores its ctx; on stop, reports is released at once, the reader is
// named at Warn with its role, and billing's lease is kept until the
// reader returns.
func TestRoles_O2_StuckReaderKeepsOnlyItsRole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		core, logs := observer.New(zapcore.InfoLevel)
		release := make(chan struct{})
		var roles *leadershipfx.Roles
		app := fxtest.New(t, supplyLock(lock), fx.Supply(zap.New(core)),
			leadershipfx.Role("billing"),
			leadershipfx.Role("reports"),
			fx.Invoke(func(r *leadershipfx.Roles) error {
				roles = r
				return r.Go("billing", "orders", func(context.Context) { <-release })
			}),
			leadershipfx.Module,
		)
		app.RequireStart()
		synctest.Wait()
		if !held(t, lock, "billing") || !held(t, lock, "reports") {
			t.Fatal("not leading both roles")
		}
		if got := strings.Join(roles.Declared(), ","); got != "billing,reports" {
			t.Fatalf("Declared = %s", got)
		}
		stopped := make(chan error, 1)
		go func() { stopped <- app.Stop(context.Background()) }()
		synctest.Wait()
		if held(t, lock, "reports") || !held(t, lock, "billing") {
			t.Fatalf("at stop: reports held %t (want released at once), billing held %t (want kept)", held(t, lock, "reports"), held(t, lock, "billing"))
		}
		time.Sleep(leadershipfx.StopWarnAfter)
		synctest.Wait()
		w := logs.FilterMessage("LeaderWorkStillRunning").All()
		if len(w) != 1 || w[0].ContextMap()["role"] != "billing" || w[0].ContextMap()["reader"] != "orders" {
			t.Fatalf("warnings %v", w)
		}
		if !held(t, lock, "billing") {
			t.Fatal("billing released while its reader runs (E11)")
		}
		close(release)
		if err := <-stopped; err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if held(t, lock, "billing") {
			t.Fatal("billing still held after its reader returned and the app stopped")
		}
	})
}

func TestRoles_O4_ReadableErrors(t *testing.T) {
	long := strings.Repeat("r", 2000)
	tests := []struct {
		name string
		opts []fx.Option
		want func(t *testing.T, msg string)
	}{
		{"very long role without Module", []fx.Option{leadershipfx.Role(long)}, func(t *testing.T, msg string) {
			if !strings.HasPrefix(msg, "leadership: ") || strings.Contains(msg, "could not build") || !strings.Contains(msg, "2000 bytes") {
				t.Errorf("got %.500s", msg)
			}
		}},
		{"work for an undeclared role", []fx.Option{leadershipfx.Role("billing"),
			fx.Invoke(func(r *leadershipfx.Roles) error { return r.Go("payroll", "x", func(context.Context) {}) }), leadershipfx.Module},
			func(t *testing.T, msg string) {
				if msg != `leadershipfx: work for role "payroll": no such role (declared: "billing"); add leadershipfx.Role("payroll")` {
					t.Errorf("got %s", msg)
				}
			}},
		{"very long role", []fx.Option{leadershipfx.Role(long), leadershipfx.Module}, func(t *testing.T, msg string) {
			if !strings.HasPrefix(msg, "leadership: ") || strings.Contains(msg, "could not build") || strings.Contains(msg, "makeFuncStub") {
				t.Errorf("not the HostLoom error first: %.300s", msg)
			}
			if strings.Contains(msg, long[:100]) || len(msg) > 400 {
				t.Errorf("the long name is printed in full (%d bytes): %.500s", len(msg), msg)
			}
			if !strings.Contains(msg, "exceeds max_key_length 512") || !strings.Contains(msg, "2000 bytes") {
				t.Errorf("no limit or length in %s", msg)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fx.New(append([]fx.Option{fx.NopLogger, env(), lockingfx.Module}, tt.opts...)...).Err()
			if err == nil {
				t.Fatal("fx.New succeeded")
			}
			tt.want(t, err.Error())
		})
	}
	// The elector's error stays matchable.
	err := fx.New(fx.NopLogger, env(), lockingfx.Module, leadershipfx.Role(long), leadershipfx.Module).Err()
	if !errors.Is(err, locking.ErrInvalidKey) {
		t.Errorf("errors.Is(ErrInvalidKey) false for %v", err)
	}
}

// TestErrors_O4_ConfigAndLockFirst: the DESIGN composition with a
// configuration that fails (a bad value, no provider) or without one:
// fx.New reports the config's or the lock's error itself, once, not fx's
// chain around the constructors that needed it.
func TestErrors_O4_ConfigAndLockFirst(t *testing.T) {
	tests := []struct {
		name   string
		config []fx.Option
		prefix string
		key    string
	}{
		{"bad value", []fx.Option{env("HOSTLOOM_LEADERSHIP__LEASE=banana")},
			"config: leadership.lease: ", "HOSTLOOM_LEADERSHIP__LEASE"},
		{"no provider", []fx.Option{configfx.Module("", config.WithEnviron(nil))},
			"config: locking.provider: is not set", "locking.provider"},
		{"supplied config without provider", []fx.Option{configfx.Supply(config.Defaults())},
			"config: locking.provider: is not set", "locking.provider"},
		{"no config", nil, "lockingfx: the graph has no config.LockingConfig", "locking.provider"},
	}
	for _, tt := range tests {
		for _, withModule := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/module=%t", tt.name, withModule), func(t *testing.T) {
				opts := append([]fx.Option{fx.NopLogger}, tt.config...)
				opts = append(opts, lockingfx.Module, leadershipfx.Role("billing"))
				if withModule {
					opts = append(opts, leadershipfx.Module)
				}
				err := fx.New(opts...).Err()
				if err == nil {
					t.Fatal("fx.New succeeded")
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, tt.prefix) || strings.Contains(msg, "could not build") || strings.Contains(msg, "makeFuncStub") {
					t.Errorf("not the HostLoom error first: %s", msg)
				}
				if strings.Count(msg, tt.key) != 1 {
					t.Errorf("%q appears %d times, want once: %s", tt.key, strings.Count(msg, tt.key), msg)
				}
			})
		}
	}
}

// TestRoles_O2_WithoutModule_StuckReaderKeepsOnlyItsRole: without Module,
// in either declaration order, the role without stuck work releases at
// once while billing keeps its lease until its reader returns.
func TestRoles_O2_WithoutModule_StuckReaderKeepsOnlyItsRole(t *testing.T) {
	for _, order := range [][]string{{"billing", "reports"}, {"reports", "billing"}} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var lock *locking.DistributedLock
				release := make(chan struct{})
				app := fxtest.New(t, env(), lockingfx.Module,
					leadershipfx.Role(order[0]),
					leadershipfx.Role(order[1]),
					fx.Populate(&lock),
					fx.Invoke(fx.Annotate(func(h *leadershipfx.Handle) error {
						return h.Go("orders", func(context.Context) { <-release })
					}, fx.ParamTags(`name:"billing"`))),
				)
				app.RequireStart()
				synctest.Wait()
				if !held(t, lock, "billing") || !held(t, lock, "reports") {
					t.Fatal("not leading both roles")
				}
				stopped := make(chan error, 1)
				go func() { stopped <- app.Stop(context.Background()) }()
				synctest.Wait()
				if held(t, lock, "reports") || !held(t, lock, "billing") {
					t.Fatalf("at stop: reports held %t (want released at once), billing held %t (want kept)", held(t, lock, "reports"), held(t, lock, "billing"))
				}
				close(release)
				if err := <-stopped; err != nil {
					t.Fatalf("Stop: %v", err)
				}
				if held(t, lock, "billing") {
					t.Fatal("billing still held after its reader returned and the app stopped")
				}
			})
		})
	}
}

// TestRoles_O4_CompositionErrorsNameKeyAndSource: a lease above the
// lock's max_lease, set by a role override or globally, fails start with
// the dotted keys and sources of both values, with or without Module.
func TestRoles_O4_CompositionErrorsNameKeyAndSource(t *testing.T) {
	tests := []struct {
		name, env, key string
		module         bool
	}{
		{"role override", "HOSTLOOM_LEADERSHIP__ROLES__BILLING__LEASE=20s", "leadership.roles.billing.lease", false},
		{"global", "HOSTLOOM_LEADERSHIP__LEASE=20s", "leadership.lease", false},
		{"global with Module", "HOSTLOOM_LEADERSHIP__LEASE=20s", "leadership.lease", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := []fx.Option{fx.NopLogger, env(tc.env, "HOSTLOOM_LOCKING__MAX_LEASE=10s"), lockingfx.Module, leadershipfx.Role("billing")}
			if tc.module {
				opts = append(opts, leadershipfx.Module)
			}
			app := fx.New(opts...)
			if err := app.Err(); err != nil {
				t.Fatalf("fx.New: %v", err)
			}
			err := app.Start(context.Background())
			if err == nil {
				_ = app.Stop(context.Background())
				t.Fatal("started with a lease above max_lease")
			}
			msg := err.Error()
			for _, want := range []string{`leadership: role "billing": lease 20s exceeds locking max_lease 10s`,
				tc.key + " from env " + strings.Split(tc.env, "=")[0], "locking.max_lease from env HOSTLOOM_LOCKING__MAX_LEASE"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %q", msg, want)
				}
			}
			var lim *leadership.LeaseLimitError
			if !errors.As(err, &lim) || lim.Lease != 20*time.Second || lim.MaxLease != 10*time.Second {
				t.Errorf("errors.As LeaseLimitError = %+v", lim)
			}
			var fe *config.FieldError
			if !errors.As(err, &fe) || fe.Key != tc.key {
				t.Errorf("errors.As FieldError = %+v", fe)
			}
		})
	}
}
