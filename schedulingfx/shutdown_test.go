package schedulingfx_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/schedulingfx"
)

// events records what happened, in order.
type events struct {
	mu  sync.Mutex
	log []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, s)
}

func (e *events) index(s string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Index(e.log, s)
}

type pair struct {
	fx.In
	Billing leadership.Leadership `name:"billing"`
	Reports leadership.Leadership `name:"reports"`
}

// instance is one replica: roles billing and reports over lock; billing
// has a job that, on its first run, ignores its ctx until release closes.
func instance(t *testing.T, lock *locking.DistributedLock, id string, log *zap.Logger, got *pair, ev *events, release <-chan struct{}, started *time.Time) *fxtest.App {
	t.Helper()
	stuck := func(ctx context.Context) error {
		ev.mu.Lock()
		*started = time.Now()
		ev.mu.Unlock()
		ev.add(id + " job started")
		<-release // ignores ctx
		ev.add(id + " job returned")
		return nil
	}
	watch := func(l leadership.Leadership) {
		l.OnChange(func(c leadership.Change) {
			if c.IsLeader {
				ev.add(id + " leads " + c.Role)
			}
		})
	}
	return fxtest.New(t,
		over(lock),
		fx.Supply(log),
		leadershipfx.Role("billing", leadershipfx.WithElectorOptions(leadership.WithIdentity(id))),
		leadershipfx.Role("reports", leadershipfx.WithElectorOptions(leadership.WithIdentity(id))),
		schedulingfx.Schedule("billing", scheduling.Job{Name: "stuck", Schedule: scheduling.Every(time.Minute), Run: stuck}),
		schedulingfx.Module,
		fx.Populate(got),
		fx.Invoke(func(p pair) { watch(p.Billing); watch(p.Reports) }),
		leadershipfx.Module,
	)
}

// TestShutdown_O2_StuckJobKeepsOnlyItsRole: instance A leads billing and
// reports; billing's job ignores its ctx. A's stop releases reports at
// once (B leads it while the job is still stuck, before the warning
// delay), names the job and role at Warn, keeps billing's lease past the
// stop deadline, and releases it only when the job returns (E11).
func TestShutdown_O2_StuckJobKeepsOnlyItsRole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := sharedLock(t)
		core, logs := observer.New(zapcore.InfoLevel)
		ev := &events{}
		release := make(chan struct{})
		var releaseOnce sync.Once
		defer releaseOnce.Do(func() { close(release) }) // a failed check must not leave the job blocked
		var a, b pair
		var startedA, startedB time.Time
		appA := instance(t, lock, "A", zap.New(core), &a, ev, release, &startedA)
		appB := instance(t, lock, "B", zap.NewNop(), &b, ev, release, &startedB)
		appA.RequireStart()
		synctest.Wait()
		appB.RequireStart()
		time.Sleep(time.Minute) // the job's first slot
		synctest.Wait()
		if ev.index("A job started") < 0 || !a.Billing.IsLeader() || !a.Reports.IsLeader() {
			t.Fatalf("A should lead both and run the job: %v", ev.log)
		}

		stopBegan := time.Now()
		stopErr := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			stopErr <- appA.Stop(ctx)
		}()
		synctest.Wait()
		// reports: released at once, taken over by B, while the job is stuck.
		if !b.Reports.IsLeader() || ev.index("B leads reports") < 0 {
			t.Fatalf("B does not lead reports after A began to stop: %v", ev.log)
		}
		if d := time.Since(stopBegan); d >= leadershipfx.StopWarnAfter {
			t.Fatalf("reports handed over after %v, not before the warning delay %v", d, leadershipfx.StopWarnAfter)
		}
		// billing: kept by A.
		if b.Billing.IsLeader() {
			t.Fatal("B leads billing while A's job still runs (E11)")
		}
		time.Sleep(leadershipfx.StopWarnAfter)
		synctest.Wait()
		warns := logs.FilterMessage("LeaderWorkStillRunning").All()
		if len(warns) != 1 {
			t.Fatalf("%d LeaderWorkStillRunning logs, want 1: %v", len(warns), logs.All())
		}
		f := warns[0].ContextMap()
		ev.mu.Lock()
		ranFor := time.Since(startedA)
		ev.mu.Unlock()
		if warns[0].Level != zapcore.WarnLevel || f["role"] != "billing" || f["job"] != "stuck" || f["running_for"] != ranFor {
			t.Fatalf("warning %v %v, want role billing, job stuck, running_for %v", warns[0].Level, f, ranFor)
		}

		// The stop deadline passes: the lease is still A's.
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if err := <-stopErr; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop returned %v, want the deadline", err)
		}
		kept := logs.FilterMessage("LeaseKeptForRunningWork").All()
		if len(kept) != 1 || kept[0].ContextMap()["role"] != "billing" || !strings.Contains(strings.Join(toStrings(kept[0].ContextMap()["running"]), " "), `job "stuck"`) {
			t.Fatalf("LeaseKeptForRunningWork logs: %v", kept)
		}
		if h, ok, _ := lock.Holder(context.Background(), "leader:billing"); !ok || b.Billing.IsLeader() {
			t.Fatalf("billing's lease is not A's any more: %+v %t", h, ok)
		}

		// The job returns: A releases billing, and only then B leads it.
		releaseOnce.Do(func() { close(release) })
		synctest.Wait()
		if !b.Billing.IsLeader() {
			t.Fatalf("B does not lead billing after A's job returned: %v", ev.log)
		}
		if r, l := ev.index("A job returned"), ev.index("B leads billing"); r < 0 || l < r {
			t.Fatalf("order: %v", ev.log)
		}
		appB.RequireStop()
	})
}

func toStrings(v any) []string {
	var out []string
	if vs, ok := v.([]any); ok {
		for _, s := range vs {
			if str, ok := s.(string); ok {
				out = append(out, str)
			}
		}
	}
	return out
}
