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

	"github.com/hostloom/hostloom/backends/redis/redislockfx"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/internal/redistest"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
)

// TestRole_X1_RedisLinkedByDefault: Redis is the library module's own
// backend. An app of configfx.Module, lockingfx.Module and a role, with
// locking.provider: redis and no backend module, leads over a real
// server; adding redislockfx.Module (the backend passed explicitly)
// changes nothing: the backend is provided once, the lock built once.
func TestRole_X1_RedisLinkedByDefault(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name, namespace string
		extra           []fx.Option
	}{
		{"lockingfx.Module alone", "alone", nil},
		{"with redislockfx.Module", "explicit", []fx.Option{redislockfx.Module}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			var billing leadership.Leadership
			opts := []fx.Option{
				env("HOSTLOOM_LOCKING__PROVIDER=redis",
					"HOSTLOOM_LOCKING__NAMESPACE="+tc.namespace,
					"HOSTLOOM_LOCKING__REDIS__ADDRS="+srv.Addr()),
				lockingfx.Module,
				leadershipfx.Role("billing"),
				fx.Supply(zap.New(core)),
				fx.Populate(fx.Annotate(&billing, fx.ParamTags(`name:"billing"`))),
				leadershipfx.Module,
			}
			app := fxtest.New(t, append(opts, tc.extra...)...)
			app.RequireStart()
			defer app.RequireStop()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := billing.WaitForLeadership(ctx); err != nil {
				t.Fatalf("no leadership over redis: %v", err)
			}
			lines := logs.FilterMessage("HostLoomLock").All()
			if len(lines) != 1 || lines[0].ContextMap()["provider"] != "redis" || lines[0].ContextMap()["app_client"] != false {
				t.Fatalf("HostLoomLock lines %v, want one for provider redis over the client it built", lines)
			}
		})
	}
}
