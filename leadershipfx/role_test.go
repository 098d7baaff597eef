package leadershipfx_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
)

// memoryProvider chooses the memory lock (G6: there is no default).
const memoryProvider = "HOSTLOOM_LOCKING__PROVIDER=memory"

// env builds a config module from environment entries, with the memory
// provider unless an entry chooses one.
func env(vars ...string) fx.Option {
	for _, v := range vars {
		if strings.HasPrefix(v, "HOSTLOOM_LOCKING__PROVIDER=") {
			return configfx.Module("", config.WithEnviron(vars))
		}
	}
	return configfx.Module("", config.WithEnviron(append([]string{memoryProvider}, vars...)))
}

// twoRoles is what the F1 tests populate: the roles billing and reports.
type twoRoles struct {
	fx.In
	Billing  leadership.Leadership `name:"billing"`
	BillingE *leadership.Elector   `name:"billing"`
	Reports  leadership.Leadership `name:"reports"`
	All      []*leadership.Elector `group:"hostloom.electors"`
}

// leadThenRelease starts app, in a synctest bubble, and stops it (F1):
// billing does not lead before the start; once the first attempts ran
// (E1), billing leads in term 1 and reports leads, and leading checks
// what else the test expects of the started app; after the stop neither
// role leads and billing's token has ended (E8).
func (got *twoRoles) leadThenRelease(t *testing.T, app *fxtest.App, leading func()) {
	t.Helper()
	if got.Billing.IsLeader() {
		t.Fatal("leads before start")
	}
	app.RequireStart()
	synctest.Wait() // the first attempt is immediate (E1)
	if !got.Billing.IsLeader() || !got.Reports.IsLeader() || got.Billing.Term() != 1 {
		t.Fatalf("billing leader=%t term=%d, reports leader=%t", got.Billing.IsLeader(), got.Billing.Term(), got.Reports.IsLeader())
	}
	leading()
	tok := got.Billing.Token()
	app.RequireStop()
	if got.Billing.IsLeader() || got.Reports.IsLeader() || tok.Err() == nil {
		t.Fatalf("after stop: leader=%t token err=%v (E8)", got.Billing.IsLeader(), tok.Err())
	}
}

func TestRole_F1_StartsLeadsAndReleasesOnStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got twoRoles
		app := fxtest.New(t,
			env(),
			lockingfx.Module,
			leadershipfx.Role("billing"),
			leadershipfx.Role("reports"),
			fx.Populate(&got),
			leadershipfx.Module,
		)
		got.leadThenRelease(t, app, func() {
			if got.Billing != leadership.Leadership(got.BillingE) || got.Billing.Role() != "billing" || got.Reports.Role() != "reports" {
				t.Fatalf("named values mixed up: %s %s", got.Billing.Role(), got.Reports.Role())
			}
			if len(got.All) != 2 {
				t.Fatalf("%d electors in the group, want 2", len(got.All))
			}
		})
	})
}

func TestRole_F1_RunsWithoutDependents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		app := fxtest.New(t,
			supplyLock(lock),
			leadershipfx.Role("billing"), // nothing depends on it
			leadershipfx.Module,
		)
		app.RequireStart()
		synctest.Wait()
		h, ok, err := lock.Holder(context.Background(), "leader:billing")
		if err != nil || !ok || h.Owner == "" {
			t.Fatalf("nobody holds leader:billing: %+v %t %v", h, ok, err)
		}
		app.RequireStop()
		if _, ok, _ := lock.Holder(context.Background(), "leader:billing"); ok {
			t.Fatal("lease still held after stop")
		}
	})
}

func TestRole_F1_T2_LeaseOverMaxLeaseFailsStart(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"section-wide lease", []string{"HOSTLOOM_LEADERSHIP__LEASE=10m", "HOSTLOOM_LEADERSHIP__RENEW_INTERVAL=1m", "HOSTLOOM_LOCKING__MAX_LEASE=1m"},
			`leadership: role "billing": lease 10m0s exceeds locking max_lease 1m0s`},
		{"role override", []string{"HOSTLOOM_LEADERSHIP__ROLES__BILLING__LEASE=90s", "HOSTLOOM_LOCKING__MAX_LEASE=1m"},
			`leadership: role "billing": lease 1m30s exceeds locking max_lease 1m0s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b leadership.Leadership
				app := fx.New(fx.NopLogger, env(tt.env...), lockingfx.Module, leadershipfx.Role("billing"),
					fx.Populate(fx.Annotate(&b, fx.ParamTags(`name:"billing"`))), leadershipfx.Module)
				if err := app.Err(); err != nil {
					t.Fatalf("fx.New: %v", err)
				}
				err := app.Start(context.Background())
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Start error %v, want %q", err, tt.want)
				}
				synctest.Wait()
				if b.IsLeader() {
					t.Fatal("the elector started despite the failed check")
				}
				_ = app.Stop(context.Background())
			})
		})
	}
}

// Roles built alike share their options (H1's memory); a role adjusted in
// code between two others is still checked with its own lease.
func TestRole_T2_EachRoleCheckedWithItsOwnOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		longer := leadershipfx.WithOptions(func(o *leadership.Options) { o.Lease, o.RenewInterval = 90*time.Second, 30*time.Second })
		app := fx.New(fx.NopLogger, env("HOSTLOOM_LOCKING__MAX_LEASE=1m"), lockingfx.Module,
			leadershipfx.Role("reports"), leadershipfx.Role("billing", longer), leadershipfx.Role("audit"))
		if err := app.Err(); err != nil {
			t.Fatalf("fx.New: %v", err)
		}
		err := app.Start(context.Background())
		want := `leadership: role "billing": lease 1m30s exceeds locking max_lease 1m0s`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Start error %v, want %q", err, want)
		}
		_ = app.Stop(context.Background())
	})
}

func TestRole_K5_KeyTooLongFailsWithTheRole(t *testing.T) {
	app := fx.New(fx.NopLogger, env("HOSTLOOM_LOCKING__MAX_KEY_LENGTH=10"), lockingfx.Module, leadershipfx.Role("billing-and-more"), leadershipfx.Module)
	err := app.Err()
	if err == nil || !strings.Contains(err.Error(), `role "billing-and-more"`) || !strings.Contains(err.Error(), "exceeds max_key_length 10") {
		t.Fatalf("fx.New error %v", err)
	}
	if !errors.Is(err, locking.ErrInvalidKey) {
		t.Errorf("error does not match locking.ErrInvalidKey: %v", err)
	}
}

func TestRole_E9_UncoordinatedPolicy(t *testing.T) {
	for _, tt := range []struct {
		policy string
		lead   bool
	}{{"follow", false}, {"lead", true}} {
		t.Run(tt.policy, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b leadership.Leadership
				app := fxtest.New(t,
					env("HOSTLOOM_LOCKING__PROVIDER=disabled", "HOSTLOOM_LEADERSHIP__WHEN_UNCOORDINATED="+tt.policy),
					lockingfx.Module, leadershipfx.Role("billing"),
					fx.Populate(fx.Annotate(&b, fx.ParamTags(`name:"billing"`))), leadershipfx.Module)
				app.RequireStart()
				time.Sleep(time.Minute) // fake time
				synctest.Wait()
				if b.IsLeader() != tt.lead || b.IsCoordinated() {
					t.Fatalf("leader=%t coordinated=%t, want leader=%t uncoordinated", b.IsLeader(), b.IsCoordinated(), tt.lead)
				}
				app.RequireStop()
			})
		})
	}
}

func TestRole_HandoverOnStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		newApp := func(id string, l *leadership.Leadership) *fxtest.App {
			return fxtest.New(t,
				supplyLock(lock),
				leadershipfx.Role("billing", leadershipfx.WithElectorOptions(leadership.WithIdentity(id))),
				fx.Populate(fx.Annotate(l, fx.ParamTags(`name:"billing"`))), leadershipfx.Module)
		}
		var a, b leadership.Leadership
		appA, appB := newApp("a", &a), newApp("b", &b)
		appA.RequireStart()
		synctest.Wait()
		appB.RequireStart()
		synctest.Wait()
		if !a.IsLeader() || b.IsLeader() {
			t.Fatalf("a=%t b=%t, want a leading", a.IsLeader(), b.IsLeader())
		}
		stopped := time.Now()
		appA.RequireStop()
		synctest.Wait()
		if !b.IsLeader() {
			t.Fatal("b did not take over after a stopped")
		}
		if d := time.Since(stopped); d != 0 {
			t.Errorf("handover took %v of fake time, want at once (release notification)", d)
		}
		appB.RequireStop()
	})
}

func TestRole_OptionsFromConfigAndCode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e *leadership.Elector
		fxtest.New(t,
			env("HOSTLOOM_LEADERSHIP__IDENTITY=pod-7", "HOSTLOOM_LEADERSHIP__ROLES__BILLING__LOCK_KEY_FORMAT=election:eu:{role}",
				"HOSTLOOM_LOCKING__NAMESPACE=acme"),
			lockingfx.Module,
			leadershipfx.Role("billing", leadershipfx.WithOptions(func(o *leadership.Options) { o.RetryInterval = 700 * time.Millisecond })),
			fx.Populate(fx.Annotate(&e, fx.ParamTags(`name:"billing"`))),
			leadershipfx.Module,
		).RequireStart().RequireStop()
		d := leadership.Describe(e)
		if d.Identity != "pod-7" || d.LockKey != "election:eu:billing" || d.ProviderKey != "acme:lock:election:eu:billing" || d.RetryInterval != 700*time.Millisecond || d.Lease != 15*time.Second {
			t.Fatalf("Describe = %+v", d)
		}
	})
}

func TestRole_UsesGraphLoggerAndMeter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.InfoLevel)
		mp := &recordingMeterProvider{}
		app := fxtest.New(t,
			env(),
			lockingfx.Module,
			leadershipfx.Role("billing"),
			fx.Supply(zap.New(core)),
			fx.Supply(fx.Annotate(mp, fx.As(new(metric.MeterProvider)))),
			leadershipfx.Module,
		).RequireStart()
		synctest.Wait()
		app.RequireStop()
		if logs.FilterField(zap.String("role", "billing")).Len() == 0 {
			t.Error("the elector did not log through the graph's logger")
		}
		if n := mp.added("github.com/hostloom/hostloom/core/leadership", leadership.MetricTransitions); n == 0 {
			t.Errorf("no transition counted through the graph's meter provider (counters added to: %v)", mp.counters())
		}
	})
}

// recordingMeterProvider is a metric.MeterProvider that counts what its
// Int64Counters add, by instrumentation scope and instrument name: enough
// to see that a component took its meter from the graph, without the
// OpenTelemetry SDK (which the library module does not require).
type recordingMeterProvider struct {
	noop.MeterProvider
	mu   sync.Mutex
	adds map[string]int64 // "scope instrument" -> sum of Add
}

func (p *recordingMeterProvider) Meter(scope string, _ ...metric.MeterOption) metric.Meter {
	return recordingMeter{p: p, scope: scope}
}

// added is the sum of what scope's counter name added.
func (p *recordingMeterProvider) added(scope, name string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.adds[scope+" "+name]
}

// counters lists the counters that added anything, for failure messages.
func (p *recordingMeterProvider) counters() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var names []string
	for k := range p.adds {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

type recordingMeter struct {
	noop.Meter
	p     *recordingMeterProvider
	scope string
}

func (m recordingMeter) Int64Counter(name string, _ ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return recordingCounter{p: m.p, key: m.scope + " " + name}, nil
}

type recordingCounter struct {
	noop.Int64Counter
	p   *recordingMeterProvider
	key string
}

// Enabled reports that the counter takes measurements: a component asks
// before it builds a measurement's attributes, and noop's says no.
func (c recordingCounter) Enabled(context.Context) bool { return true }

func (c recordingCounter) Add(_ context.Context, n int64, _ ...metric.AddOption) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	if c.p.adds == nil {
		c.p.adds = make(map[string]int64)
	}
	c.p.adds[c.key] += n
}
