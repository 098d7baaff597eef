package schedulingfx_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/schedulingfx"
)

// memoryProvider chooses the memory lock (G6: there is no default
// provider).
const memoryProvider = "HOSTLOOM_LOCKING__PROVIDER=memory"

// env is a config module over the environment entries vars, with the
// memory lock unless an entry chooses a provider.
func env(vars ...string) fx.Option {
	for _, v := range vars {
		if strings.HasPrefix(v, "HOSTLOOM_LOCKING__PROVIDER=") {
			return config.Module("", config.WithEnviron(vars))
		}
	}
	return config.Module("", config.WithEnviron(append([]string{memoryProvider}, vars...)))
}

// sharedLock is a memory lock that several apps of one test share; call
// it inside the synctest bubble.
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
