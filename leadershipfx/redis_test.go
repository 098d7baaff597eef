package leadershipfx_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/internal/redistest"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
)

// TestRole_E7_UnreachableRedisAtStart starts an app whose Redis is down:
// the app starts, nobody leads, the outage is logged once; when the server
// comes back the role is elected and the recovery is logged once.
func TestRole_E7_UnreachableRedisAtStart(t *testing.T) {
	srv := redistest.Start(t)
	srv.Kill()
	core, logs := observer.New(zapcore.InfoLevel)
	var billing leadership.Leadership
	app := fxtest.New(t,
		env("HOSTLOOM_LOCKING__PROVIDER=redis",
			"HOSTLOOM_LOCKING__REDIS__ADDRS="+srv.Addr(),
			"HOSTLOOM_LOCKING__REDIS__DIAL_TIMEOUT=200ms",
			"HOSTLOOM_LEADERSHIP__RETRY_INTERVAL=100ms",
			"HOSTLOOM_LEADERSHIP__LEASE=2s",
			"HOSTLOOM_LEADERSHIP__RENEW_INTERVAL=500ms"),
		lockingfx.Module,
		leadershipfx.Role("billing"),
		fx.Supply(zap.New(core)),
		fx.Populate(fx.Annotate(&billing, fx.ParamTags(`name:"billing"`))),
		leadershipfx.Module,
	)
	app.RequireStart()
	defer app.RequireStop()

	// Real server, real time: observe by polling.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s; log: %v", what, logs.All())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("outage logged", func() bool { return logs.FilterMessage("LeadershipProviderUnavailable").Len() > 0 })
	time.Sleep(500 * time.Millisecond) // several more failed attempts
	if billing.IsLeader() {
		t.Fatal("leads without a reachable lock")
	}
	if n := logs.FilterMessage("LeadershipProviderUnavailable").Len(); n != 1 {
		t.Fatalf("outage logged %d times, want once", n)
	}

	srv.Restart(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := billing.WaitForLeadership(ctx); err != nil {
		t.Fatalf("no leadership after the server came back: %v", err)
	}
	if n := logs.FilterMessage("LeadershipProviderRecovered").Len(); n != 1 {
		t.Fatalf("recovery logged %d times, want once", n)
	}
}
