package schedulingfx_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
	"github.com/hostloom/hostloom/schedulingfx"
)

// TestJob_S1_WithoutModules is the DESIGN snippet, without
// leadershipfx.Module or schedulingfx.Module: the role builds its
// scheduler; the job runs only on the leader, and on the new leader after
// a handover.
func TestJob_S1_WithoutModules(t *testing.T) {
	testOnlyTheLeaderRuns(t)
}

// TestJob_DesignSnippet_WithoutModules: configfx.Module, lockingfx.Module,
// a role and two of its jobs (one declared before the role), as in the
// DESIGN snippet: one scheduler for the role, both jobs run.
func TestJob_DesignSnippet_WithoutModules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var invoices, reports atomic.Int64
		app := fxtest.New(t,
			withEnv(),
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
	testJobsStopBeforeRelease(t, func(jobFirst bool, role, job fx.Option) []fx.Option {
		if jobFirst {
			return []fx.Option{job, role}
		}
		return []fx.Option{role, job}
	})
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
