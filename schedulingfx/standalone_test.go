package schedulingfx_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
	"github.com/hostloom/hostloom/schedulingfx"
)

// TestJob_S1_WithoutModules is the DESIGN snippet, without
// leadershipfx.Module or schedulingfx.Module: the role builds its
// scheduler; the job runs only on the leader, and on the new leader after
// a handover.
func TestJob_S1_WithoutModules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := sharedLock(t)
		var runsA, runsB atomic.Int64
		count := func(n *atomic.Int64) func(context.Context) error {
			return func(context.Context) error { n.Add(1); return nil }
		}
		var a, b leadership.Leadership
		appA := fxtest.New(t, over(lock), leadershipfx.Role("billing"), schedulingfx.Job("billing", "invoices", "@every 1m", count(&runsA)),
			fx.Populate(fx.Annotate(&a, fx.ParamTags(`name:"billing"`))))
		appB := fxtest.New(t, over(lock), leadershipfx.Role("billing"), schedulingfx.Job("billing", "invoices", "@every 1m", count(&runsB)),
			fx.Populate(fx.Annotate(&b, fx.ParamTags(`name:"billing"`))))
		appA.RequireStart()
		synctest.Wait()
		appB.RequireStart()
		time.Sleep(5*time.Minute + time.Second)
		synctest.Wait()
		if !a.IsLeader() || b.IsLeader() {
			t.Fatalf("a leads %t, b leads %t", a.IsLeader(), b.IsLeader())
		}
		if ra := runsA.Load(); ra < 5 || ra > 6 || runsB.Load() != 0 {
			t.Fatalf("runs: leader %d, follower %d; want 5 or 6, and 0", runsA.Load(), runsB.Load())
		}
		if st, err := lock.JobStatus(context.Background(), "sched:billing:invoices"); err != nil || !st.HasSlot || st.Slot == 0 {
			t.Fatalf("slot store: %+v %v", st, err)
		}
		appA.RequireStop()
		time.Sleep(2*time.Minute + time.Second)
		synctest.Wait()
		if rb := runsB.Load(); rb < 2 || rb > 3 {
			t.Fatalf("after handover the new leader ran %d times in 2m, want 2 (3 with a caught-up slot)", rb)
		}
		appB.RequireStop()
	})
}

// TestJob_DesignSnippet_WithoutModules: config.Module, lockingfx.Module,
// a role and two of its jobs (one declared before the role), as in the
// DESIGN snippet: one scheduler for the role, both jobs run.
func TestJob_DesignSnippet_WithoutModules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var invoices, reports atomic.Int64
		app := fxtest.New(t,
			memory(),
			lockingfx.Module,
			schedulingfx.Job("billing", "reports", "@every 1m", func(context.Context) error { reports.Add(1); return nil }),
			leadershipfx.Role("billing"),
			schedulingfx.Job("billing", "invoices", "*/5 * * * *", func(context.Context) error { invoices.Add(1); return nil }),
		)
		app.RequireStart()
		time.Sleep(10*time.Minute + time.Second)
		synctest.Wait()
		app.RequireStop()
		if invoices.Load() < 2 || reports.Load() < 10 {
			t.Fatalf("invoices ran %d times in 10m (want ≥ 2), reports %d (want ≥ 10)", invoices.Load(), reports.Load())
		}
	})
}

// TestJob_E11_WithoutModules: a run still going at shutdown ends, its
// cleanup included, while the role still holds the lease; the role
// releases it only then.
func TestJob_E11_WithoutModules(t *testing.T) {
	for _, order := range []string{"role first", "job first"} {
		t.Run(order, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lock := sharedLock(t)
				var heldAtEnd atomic.Int32 // 1 held, 2 released
				started := make(chan struct{})
				run := func(ctx context.Context) error {
					close(started)
					<-ctx.Done()
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
				opts := []fx.Option{over(lock), role, job}
				if order == "job first" {
					opts = []fx.Option{over(lock), job, role}
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

// TestJob_WithSchedulingModuleOnly: schedulingfx.Module without
// leadershipfx.Module attaches the scheduler to the role's own hook.
func TestJob_WithSchedulingModuleOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := sharedLock(t)
		var runs atomic.Int64
		var s *schedulingfx.Schedulers
		app := fxtest.New(t, over(lock), leadershipfx.Role("billing"),
			schedulingfx.Job("billing", "tick", "@every 1m", func(context.Context) error { runs.Add(1); return nil }),
			schedulingfx.Module, fx.Populate(&s))
		app.RequireStart()
		time.Sleep(3*time.Minute + time.Second)
		synctest.Wait()
		app.RequireStop()
		if s.For("billing") == nil || runs.Load() < 3 {
			t.Fatalf("scheduler %v, %d runs in 3m (want ≥ 3)", s.For("billing"), runs.Load())
		}
	})
}
