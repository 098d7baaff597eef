package lockingfx_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/internal/redistest"
	"github.com/hostloom/hostloom/lockingfx"
)

type provided struct {
	fx.In
	Lock     locking.Lock
	DLock    *locking.DistributedLock
	Provider locking.Provider
}

func TestModule_DefaultsToMemory(t *testing.T) {
	var got provided
	fxtest.New(t, lockingfx.Module, fx.Populate(&got)).RequireStart().RequireStop()
	if _, ok := got.Provider.(*memlock.Provider); !ok {
		t.Fatalf("provider %T, want *memlock.Provider", got.Provider)
	}
	if got.Lock != locking.Lock(got.DLock) || !got.Lock.Coordinated() {
		t.Fatalf("lock %T coordinated=%t", got.Lock, got.Lock.Coordinated())
	}
	if got.DLock.MaxLease() != locking.DefaultMaxLease {
		t.Errorf("max lease %v", got.DLock.MaxLease())
	}
	ctx := context.Background()
	if _, err := got.Lock.TryAcquire(ctx, "k", time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := got.Lock.TryAcquire(ctx, "k", time.Second); !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("second acquire: %v, want ErrNotAcquired", err)
	}
}

func TestModule_L4_DisabledGrantsEveryone(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  []string
	}{
		{"provider disabled", []string{"HOSTLOOM_LOCKING__PROVIDER=disabled"}},
		// Enabled false with provider redis builds no client: no address needed.
		{"enabled false", []string{"HOSTLOOM_LOCKING__ENABLED=false", "HOSTLOOM_LOCKING__PROVIDER=redis"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got provided
			fxtest.New(t, config.Module("", config.WithEnviron(tt.env)), lockingfx.Module, fx.Populate(&got)).RequireStart().RequireStop()
			if got.Lock.Coordinated() || got.Provider != nil {
				t.Fatalf("coordinated=%t provider=%v, want a lock that grants everyone", got.Lock.Coordinated(), got.Provider)
			}
			ctx := context.Background()
			for range 2 {
				if _, err := got.Lock.TryAcquire(ctx, "k", time.Second); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestModule_RedisBuildsAndClosesItsClient(t *testing.T) {
	srv := redistest.Start(t)
	core, logs := observer.New(zapcore.InfoLevel)
	var got provided
	app := fxtest.New(t,
		config.Module("", config.WithEnviron([]string{
			"HOSTLOOM_LOCKING__PROVIDER=redis",
			"HOSTLOOM_LOCKING__NAMESPACE=billing",
			"HOSTLOOM_LOCKING__REDIS__ADDRS=" + srv.Addr(),
			"HOSTLOOM_LOCKING__REDIS__PASSWORD=", // empty: the server has none
		})),
		lockingfx.Module,
		fx.Supply(zap.New(core)),
		fx.Populate(&got),
	)
	app.RequireStart()
	if _, ok := got.Provider.(*redislock.Provider); !ok {
		t.Fatalf("provider %T, want *redislock.Provider", got.Provider)
	}
	ctx := context.Background()
	l, err := got.Lock.TryAcquire(ctx, "job", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	probe := srv.Client(t)
	if n, err := probe.Exists(ctx, "billing:lock:job").Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS billing:lock:job = %d, %v", n, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	app.RequireStop()
	// The client New built is closed: the lock can no longer reach Redis.
	if _, err := got.Lock.TryAcquire(ctx, "job", time.Second); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("acquire after stop: %v, want a closed-client error", err)
	}
	entries := logs.FilterMessage("HostLoomLock").All()
	if len(entries) != 1 || entries[0].ContextMap()["provider"] != "redis" {
		t.Fatalf("log entries %v", entries)
	}
}

func TestModule_RedisUsesAndKeepsTheAppClient(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	var got provided
	fxtest.New(t,
		config.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=redis"})), // no addrs: the app's client is used
		lockingfx.Module,
		fx.Supply(fx.Annotate(c, fx.As(new(redis.UniversalClient)))),
		fx.Populate(&got),
	).RequireStart().RequireStop()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("the app's client was closed: %v", err)
	}
	if _, err := got.Lock.TryAcquire(ctx, "k", time.Second); err != nil {
		t.Fatalf("acquire through the app's client: %v", err)
	}
	if n, _ := c.Exists(ctx, "lock:k").Result(); n != 1 {
		t.Fatalf("lock:k not stored through the app's client")
	}
}

func TestModule_E7_UnreachableRedisDoesNotStopTheApp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	var got provided
	fxtest.New(t,
		config.Module("", config.WithEnviron([]string{
			"HOSTLOOM_LOCKING__PROVIDER=redis",
			"HOSTLOOM_LOCKING__REDIS__ADDRS=" + addr,
			"HOSTLOOM_LOCKING__REDIS__DIAL_TIMEOUT=200ms",
		})),
		lockingfx.Module,
		fx.Populate(&got),
	).RequireStart().RequireStop()
	if _, err := got.Lock.TryAcquire(context.Background(), "k", time.Second); err == nil || errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("acquire against nothing: %v, want a provider error", err)
	}
}

func TestBuild_BadConfigNamesTheKey(t *testing.T) {
	cfg := config.Defaults().Locking
	cfg.UseHashTags = true
	if _, err := lockingfx.Build(cfg, nil); err == nil || !strings.Contains(err.Error(), "use_hash_tags requires a namespace") {
		t.Errorf("hash tags without namespace: %v", err)
	}
	cfg = config.Defaults().Locking
	cfg.Provider = config.ProviderRedis
	cfg.Redis.Password = "hunter2-secret"
	_, err := lockingfx.Build(cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "locking.redis.addrs") {
		t.Errorf("redis without addrs: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error shows the password: %v", err)
	}
	cfg.Provider = "etcd"
	if _, err := lockingfx.Build(cfg, nil); err == nil || !strings.Contains(err.Error(), `locking.provider "etcd"`) {
		t.Errorf("unknown provider: %v", err)
	}
}

func TestModule_F3_LogRedactsPassword(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	fxtest.New(t,
		config.Module("", config.WithEnviron([]string{
			"HOSTLOOM_LOCKING__PROVIDER=redis",
			"HOSTLOOM_LOCKING__REDIS__ADDRS=127.0.0.1:1",
			"HOSTLOOM_LOCKING__REDIS__PASSWORD=hunter2-secret",
		})),
		lockingfx.Module,
		fx.Supply(zap.New(core)),
		fx.Invoke(func(locking.Lock) {}),
	).RequireStart().RequireStop()
	all := logs.All()
	if len(all) != 1 {
		t.Fatalf("%d log entries", len(all))
	}
	redisField := all[0].ContextMap()["redis"].(map[string]any)
	if redisField["password"] != "[redacted]" {
		t.Fatalf("logged password %v", redisField["password"])
	}
}
