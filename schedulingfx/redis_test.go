package schedulingfx_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/internal/redistest"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
	"github.com/hostloom/hostloom/schedulingfx"
)

// TestShutdown_O2_StuckJobOverRedis is the stuck-job shutdown over a real
// redis-server and real time: replica B takes reports while replica A's
// billing job is still stuck (A released reports at once), A's warning
// names the job and the role, and B takes billing only after the job
// returned. Causality is asserted, not durations.
func TestShutdown_O2_StuckJobOverRedis(t *testing.T) {
	srv := redistest.Start(t)
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release) // a failed check must not leave the job blocked
		}
	}()
	ev := &events{}
	replica := func(id string, log *zap.Logger, got *pair) *fxtest.App {
		stuck := func(ctx context.Context) error {
			ev.add(id + " job started")
			<-release // ignores ctx
			ev.add(id + " job returned")
			return nil
		}
		return fxtest.New(t,
			configfx.Module("", config.WithEnviron([]string{
				"HOSTLOOM_LOCKING__PROVIDER=redis",
				"HOSTLOOM_LOCKING__REDIS__ADDRS=" + srv.Addr(),
				"HOSTLOOM_LEADERSHIP__IDENTITY=" + id,
				"HOSTLOOM_LEADERSHIP__LEASE=5s",
				"HOSTLOOM_LEADERSHIP__RENEW_INTERVAL=1s",
				"HOSTLOOM_LEADERSHIP__RETRY_INTERVAL=1s",
			})),
			lockingfx.Module,
			fx.Supply(log),
			leadershipfx.Role("billing"),
			leadershipfx.Role("reports"),
			schedulingfx.Schedule("billing", scheduling.Job{Name: "stuck", Schedule: scheduling.Every(50 * time.Millisecond), Run: stuck}),
			schedulingfx.Module,
			fx.Populate(got),
			fx.Invoke(func(p pair) {
				for _, l := range []leadership.Leadership{p.Billing, p.Reports} {
					l.OnChange(func(c leadership.Change) {
						if c.IsLeader {
							ev.add(id + " leads " + c.Role)
						}
					})
				}
			}),
			leadershipfx.Module,
		)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	var a, b pair
	appA := replica("A", zap.New(core), &a)
	appB := replica("B", zap.NewNop(), &b)
	appA.RequireStart()
	waitUntil(t, "A leads both and runs the job", func() bool {
		return a.Billing.IsLeader() && a.Reports.IsLeader() && ev.index("A job started") >= 0
	})
	appB.RequireStart()
	defer appB.RequireStop()

	stopErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stopErr <- appA.Stop(ctx)
	}()
	waitUntil(t, "B leads reports", b.Reports.IsLeader)
	waitUntil(t, "A names the stuck job", func() bool { return logs.FilterMessage("LeaderWorkStillRunning").Len() > 0 })
	w := logs.FilterMessage("LeaderWorkStillRunning").All()[0].ContextMap()
	if w["role"] != "billing" || w["job"] != "stuck" {
		t.Errorf("warning fields %v, want role billing and job stuck", w)
	}
	if b.Billing.IsLeader() || ev.index("A job returned") >= 0 {
		t.Fatalf("B leads billing while A's job runs: %v", ev.log)
	}
	close(release)
	waitUntil(t, "B leads billing", b.Billing.IsLeader)
	if err := <-stopErr; err != nil {
		t.Fatalf("A's Stop: %v", err)
	}
	if r, l, rep := ev.index("A job returned"), ev.index("B leads billing"), ev.index("B leads reports"); rep < 0 || r < rep || l < r {
		t.Fatalf("want B leads reports, then A's job returns, then B leads billing: %v", ev.log)
	}
}

// waitUntil polls cond on real time (a real server does not advance fake
// time), for at most ten seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
