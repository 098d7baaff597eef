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
	"github.com/hostloom/hostloom/configfx"
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

// over supplies lock as the app's locking.Lock and *locking.DistributedLock.
func over(l *locking.DistributedLock) fx.Option {
	return fx.Supply(l, fx.Annotate(l, fx.As(new(locking.Lock))))
}

// testOnlyTheLeaderRuns starts two apps A and B over one shared lock, A
// first, each with role billing, its job "invoices" due every minute and
// modules after them (the fx modules, or none). A leads and B does not;
// the job runs only on A, the lock (the slot store) records its last slot,
// and once A stops, B leads and runs it (S1).
func testOnlyTheLeaderRuns(t *testing.T, modules ...fx.Option) {
	synctest.Test(t, func(t *testing.T) {
		lock := sharedLock(t)
		newApp := func(runs *atomic.Int64, l *leadership.Leadership) *fxtest.App {
			opts := []fx.Option{over(lock), leadershipfx.Role("billing"),
				schedulingfx.Job("billing", "invoices", "@every 1m", func(context.Context) error { runs.Add(1); return nil }),
				fx.Populate(fx.Annotate(l, fx.ParamTags(`name:"billing"`)))}
			return fxtest.New(t, append(opts, modules...)...)
		}
		var runsA, runsB atomic.Int64
		var a, b leadership.Leadership
		appA, appB := newApp(&runsA, &a), newApp(&runsB, &b)
		appA.RequireStart()
		synctest.Wait()
		appB.RequireStart()
		time.Sleep(5*time.Minute + time.Second)
		synctest.Wait()
		if !a.IsLeader() || b.IsLeader() {
			t.Fatalf("a leads %t, b leads %t", a.IsLeader(), b.IsLeader())
		}
		// Five slots fell due (six when the start instant is a slot).
		if ra := runsA.Load(); ra < 5 || ra > 6 || runsB.Load() != 0 {
			t.Fatalf("runs: leader %d, follower %d; want 5 or 6, and 0", runsA.Load(), runsB.Load())
		}
		// The slot store (the shared lock) recorded the last slot.
		if st, err := lock.JobStatus(context.Background(), "sched:billing:invoices"); err != nil || !st.HasSlot || st.Slot == 0 {
			t.Fatalf("slot store: %+v %v", st, err)
		}
		appA.RequireStop() // hands over to B
		time.Sleep(2*time.Minute + time.Second)
		synctest.Wait()
		if rb := runsB.Load(); rb < 2 || rb > 3 {
			t.Fatalf("after handover the new leader ran %d times in 2m, want 2 (3 with a caught-up slot)", rb)
		}
		appB.RequireStop()
	})
}

// testJobsStopBeforeRelease checks the role's stop order (E11) in a
// subtest per order of the role's and the job's options, "role first" and
// "job first": compose places them, with the modules the test uses, after
// the shared lock. A run still going at shutdown ends, and the scheduler
// returns, while this instance still holds the lease, also when the run's
// cleanup outlasts StopWarnAfter; only then does the elector release it.
func testJobsStopBeforeRelease(t *testing.T, compose func(jobFirst bool, role, job fx.Option) []fx.Option) {
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
				app := fxtest.New(t, append([]fx.Option{over(lock)}, compose(order == "job first", role, job)...)...)
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

// TestJob_S1_RunsOnlyOnTheLeader: with schedulingfx.Module and
// leadershipfx.Module, the job runs only on the leader, and on the new
// leader after a handover.
func TestJob_S1_RunsOnlyOnTheLeader(t *testing.T) {
	testOnlyTheLeaderRuns(t, schedulingfx.Module, leadershipfx.Module)
}

// TestJob_E11_JobsStopBeforeTheElectorReleases checks the role's stop
// order, whatever the order of the options: a run still going at shutdown
// ends, and the scheduler returns, while this instance still holds the
// lease, also when the run's cleanup outlasts StopWarnAfter; only then does
// the elector release it.
func TestJob_E11_JobsStopBeforeTheElectorReleases(t *testing.T) {
	testJobsStopBeforeRelease(t, func(jobFirst bool, role, job fx.Option) []fx.Option {
		if jobFirst {
			return []fx.Option{schedulingfx.Module, job, role, leadershipfx.Module}
		}
		return []fx.Option{role, job, schedulingfx.Module, leadershipfx.Module}
	})
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
			withEnv(),
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
			opts := append([]fx.Option{fx.NopLogger, withEnv(), lockingfx.Module, leadershipfx.Role("billing"), schedulingfx.Module}, tt.opts...)
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
			configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=disabled", "HOSTLOOM_LEADERSHIP__WHEN_UNCOORDINATED=lead"})),
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
