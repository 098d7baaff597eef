package schedulingfx_test

import (
	"context"
	"errors"
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

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
	"github.com/hostloom/hostloom/schedulingfx"
)

func sharedLock(t *testing.T) *locking.DistributedLock {
	t.Helper()
	l, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// memory is a config module choosing the memory lock (G6: there is no
// default provider).
func memory() fx.Option {
	return config.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory"}))
}

// over supplies lock as the app's locking.Lock and *locking.DistributedLock.
func over(l *locking.DistributedLock) fx.Option {
	return fx.Supply(l, fx.Annotate(l, fx.As(new(locking.Lock))))
}

func TestJob_S1_RunsOnlyOnTheLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := sharedLock(t)
		var runsA, runsB atomic.Int64
		count := func(n *atomic.Int64) func(context.Context) error {
			return func(context.Context) error { n.Add(1); return nil }
		}
		appA := fxtest.New(t, over(lock), leadershipfx.Role("billing"), schedulingfx.Job("billing", "invoices", "@every 1m", count(&runsA)),
			schedulingfx.Module, leadershipfx.Module)
		appB := fxtest.New(t, over(lock), leadershipfx.Role("billing"), schedulingfx.Job("billing", "invoices", "@every 1m", count(&runsB)),
			schedulingfx.Module, leadershipfx.Module)
		appA.RequireStart()
		synctest.Wait()
		appB.RequireStart()
		time.Sleep(5*time.Minute + time.Second)
		synctest.Wait()
		// Five slots fell due (six when the start instant is a slot).
		if a := runsA.Load(); a < 5 || a > 6 || runsB.Load() != 0 {
			t.Fatalf("runs: leader %d, follower %d; want 5 or 6, and 0", runsA.Load(), runsB.Load())
		}
		// The slot store (the shared lock) recorded the last slot.
		if st, err := lock.JobStatus(context.Background(), "sched:billing:invoices"); err != nil || !st.HasSlot || st.Slot == 0 {
			t.Fatalf("slot store: %+v %v", st, err)
		}
		appA.RequireStop() // hands over to B
		time.Sleep(2*time.Minute + time.Second)
		synctest.Wait()
		if b := runsB.Load(); b < 2 || b > 3 {
			t.Fatalf("after handover the new leader ran %d times in 2m, want 2 (3 with a caught-up slot)", b)
		}
		appB.RequireStop()
	})
}

// TestJob_E11_JobsStopBeforeTheElectorReleases checks the role's stop
// order, whatever the order of the options: a run still going at shutdown
// ends, and the scheduler returns, while this instance still holds the
// lease, also when the run's cleanup outlasts StopWarnAfter; only then does
// the elector release it.
func TestJob_E11_JobsStopBeforeTheElectorReleases(t *testing.T) {
	for _, order := range []string{"role first", "job first"} {
		t.Run(order, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lock := sharedLock(t)
				var heldAtEnd atomic.Int32 // 1 held, 2 released
				started := make(chan struct{})
				run := func(ctx context.Context) error {
					close(started)
					<-ctx.Done()
					// Cleanup that takes a while: the lease must outlast it.
					time.Sleep(3 * time.Second)
					if _, ok, _ := lock.Holder(context.Background(), "leader:billing"); ok {
						heldAtEnd.Store(1)
					} else {
						heldAtEnd.Store(2)
					}
					return nil
				}
				role := leadershipfx.Role("billing")
				job := schedulingfx.Schedule("billing", scheduling.Job{Name: "long", Schedule: scheduling.Every(time.Minute), Run: run})
				opts := []fx.Option{over(lock), role, job, schedulingfx.Module, leadershipfx.Module}
				if order == "job first" {
					opts = []fx.Option{over(lock), schedulingfx.Module, job, role, leadershipfx.Module}
				}
				app := fxtest.New(t, opts...)
				app.RequireStart()
				<-started
				app.RequireStop()
				if got := heldAtEnd.Load(); got != 1 {
					t.Fatalf("when the run ended the lease was %s, want still held (E11)", map[int32]string{0: "never checked", 2: "already released"}[got])
				}
				if _, ok, _ := lock.Holder(context.Background(), "leader:billing"); ok {
					t.Fatal("lease still held after stop")
				}
			})
		})
	}
}

type deps struct {
	fx.In
	Counter *atomic.Int64
	Billing leadership.Leadership `name:"billing"`
}

func TestJobFunc_TakesDependencies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counter := new(atomic.Int64)
		var sawLeader atomic.Bool
		core, logs := observer.New(zapcore.InfoLevel)
		app := fxtest.New(t,
			memory(),
			lockingfx.Module,
			leadershipfx.Role("billing"),
			leadershipfx.Role("reports"),
			fx.Supply(counter, zap.New(core)),
			schedulingfx.JobFunc("billing", func(d deps) scheduling.Job {
				return scheduling.Job{Name: "count", Schedule: scheduling.Every(time.Minute), Run: func(context.Context) error {
					sawLeader.Store(d.Billing.IsLeader())
					d.Counter.Add(1)
					return nil
				}}
			}),
			schedulingfx.JobFunc("billing", func(c *atomic.Int64) (scheduling.Job, error) {
				return scheduling.Job{Name: "count-too", Schedule: scheduling.Every(time.Minute), Run: func(context.Context) error { c.Add(1); return nil }}, nil
			}),
			schedulingfx.Job("reports", "daily", "@daily", func(context.Context) error { return nil }, schedulingfx.Timeout(time.Minute)),
			schedulingfx.Module,
			leadershipfx.Module,
		)
		app.RequireStart()
		time.Sleep(3*time.Minute + time.Second)
		synctest.Wait()
		app.RequireStop()
		// The bubble starts on a whole minute: slots at 0, 1, 2 and 3 minutes
		// (the one due at the start instant is run by the misfire catch-up),
		// for each of the two jobs.
		if counter.Load() != 8 || !sawLeader.Load() {
			t.Fatalf("counter %d (want 8: two jobs, four slots), saw leader %t", counter.Load(), sawLeader.Load())
		}
		// One scheduler per role, however many options contributed jobs.
		if n := logs.FilterMessage("SchedulerStarted").Len(); n != 2 {
			t.Fatalf("%d schedulers started, want 2 (one per role)", n)
		}
	})
}

func TestJob_S6_BadJobsFailTheApp(t *testing.T) {
	noop := func(context.Context) error { return nil }
	tests := []struct {
		name string
		opts []fx.Option
		want []string
	}{
		{"bad cron", []fx.Option{schedulingfx.Job("billing", "invoices", "*/5 * *", noop)},
			[]string{`schedulingfx: job "invoices" of role "billing"`}},
		{"role without elector", []fx.Option{schedulingfx.Job("payroll", "pay", "@hourly", noop)},
			[]string{`job "pay" is bound to role "payroll", which has no elector (add leadershipfx.Role("payroll"))`}},
		{"duplicate name", []fx.Option{schedulingfx.Job("billing", "x", "@hourly", noop), schedulingfx.Job("billing", "x", "@daily", noop)},
			[]string{`schedulingfx: role "billing"`, `"x"`}},
		{"nil run and negative timeout", []fx.Option{schedulingfx.Job("billing", "y", "@hourly", nil, schedulingfx.Timeout(-time.Second))},
			[]string{`schedulingfx: role "billing"`, `"y"`}},
		{"not a constructor", []fx.Option{schedulingfx.JobFunc("billing", func() int { return 1 })},
			[]string{`schedulingfx: JobFunc for role "billing": func() int is not a func(...) scheduling.Job`}},
		{"constructor error", []fx.Option{schedulingfx.JobFunc("billing", func() (scheduling.Job, error) { return scheduling.Job{}, errors.New("no database") })},
			[]string{`schedulingfx: job constructor for role "billing": no database`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]fx.Option{fx.NopLogger, memory(), lockingfx.Module, leadershipfx.Role("billing"), schedulingfx.Module}, tt.opts...)
			err := fx.New(append(opts, leadershipfx.Module)...).Err()
			if err == nil {
				t.Fatal("fx.New succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %v\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestJob_RunsOverADisabledLockWithoutSlotStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int64
		app := fxtest.New(t,
			config.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=disabled", "HOSTLOOM_LEADERSHIP__WHEN_UNCOORDINATED=lead"})),
			lockingfx.Module,
			leadershipfx.Role("billing"),
			schedulingfx.Job("billing", "tick", "@every 1m", func(context.Context) error { runs.Add(1); return nil }),
			schedulingfx.Module,
			leadershipfx.Module,
		)
		app.RequireStart()
		time.Sleep(2*time.Minute + time.Second)
		synctest.Wait()
		app.RequireStop()
		if runs.Load() != 2 {
			t.Fatalf("%d runs, want 2 (E9 lead over a disabled lock; no slot store)", runs.Load())
		}
	})
}
