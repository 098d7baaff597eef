package lockingfx_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/hostloom/hostloom/configfx"
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

func TestModule_G6_NoProviderFailsStart(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []fx.Option
		want []string
	}{
		{"no configuration in the graph", nil,
			[]string{"lockingfx: the graph has no config.LockingConfig", "config: locking.provider: is not set: choose memory, redis, postgres, disabled"}},
		{"configuration without provider", []fx.Option{configfx.Supply(config.Defaults())},
			[]string{"config: locking.provider: is not set: choose memory, redis, postgres, disabled"}},
		{"loaded configuration without provider", []fx.Option{configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LEADERSHIP__LEASE=20s"}))},
			[]string{"config: locking.provider: is not set: choose memory, redis, postgres, disabled (memory coordinates this process only) (not set in env HOSTLOOM_LOCKING__PROVIDER)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			app := fx.New(append([]fx.Option{fx.NopLogger, lockingfx.Module, fx.Invoke(func(locking.Lock) {})}, tt.opts...)...)
			err := app.Err()
			if err == nil {
				t.Fatal("fx.New succeeded without a provider")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
		})
	}
	if _, err := lockingfx.Build(config.LockingConfig{}, nil); err == nil || !strings.Contains(err.Error(), "locking.provider: is not set") {
		t.Errorf("Build without provider: %v", err)
	}
}

func TestModule_G6_MemoryWhenChosenWarnsOnce(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	var got provided
	fxtest.New(t,
		configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory"})),
		lockingfx.Module,
		fx.Supply(zap.New(core)),
		fx.Populate(&got),
	).RequireStart().RequireStop()
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
	warns := logs.FilterLevelExact(zapcore.WarnLevel).All()
	if len(warns) != 1 || warns[0].Message != "HostLoomLockMemory" {
		t.Fatalf("warnings %v, want one HostLoomLockMemory", warns)
	}
	if f := warns[0].ContextMap(); f["coordinates"] != "the electors of this process only" || f["source"] != "env HOSTLOOM_LOCKING__PROVIDER" {
		t.Errorf("warning fields %v", f)
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
			fxtest.New(t, configfx.Module("", config.WithEnviron(tt.env)), lockingfx.Module, fx.Populate(&got)).RequireStart().RequireStop()
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
		configfx.Module("", config.WithEnviron([]string{
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
		configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=redis"})), // no addrs: the app's client is used
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
		configfx.Module("", config.WithEnviron([]string{
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
	mem := config.Defaults().Locking
	mem.Provider = config.ProviderMemory
	cfg := mem
	cfg.UseHashTags = true
	if _, err := lockingfx.Build(cfg, nil); err == nil || !strings.Contains(err.Error(), `config: locking.use_hash_tags: use_hash_tags requires a namespace, namespace is ""`) {
		t.Errorf("hash tags without namespace: %v", err)
	}
	cfg = mem
	cfg.Provider = config.ProviderRedis
	cfg.Redis.Password = "hunter2-secret"
	_, err := lockingfx.Build(cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "locking.redis.addrs") {
		t.Errorf("redis without addrs: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error shows the password: %v", err)
	}
	cfg.Redis.Addrs = []string{"127.0.0.1:70000"}
	if _, err := lockingfx.Build(cfg, nil); err == nil || !strings.Contains(err.Error(), `config: locking.redis.addrs: "127.0.0.1:70000": port "70000" is not a number from 1 to 65535`) {
		t.Errorf("O4 port out of range: %v", err)
	}
	cfg.Provider = "etcd"
	if _, err := lockingfx.Build(cfg, nil); err == nil || !strings.Contains(err.Error(), `config: locking.provider: "etcd" is not one of memory, redis, postgres, disabled`) {
		t.Errorf("unknown provider: %v", err)
	}
}

func TestModule_F3_LogRedactsPassword(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	fxtest.New(t,
		configfx.Module("", config.WithEnviron([]string{
			"HOSTLOOM_LOCKING__PROVIDER=redis",
			"HOSTLOOM_LOCKING__REDIS__ADDRS=127.0.0.1:1",
			"HOSTLOOM_LOCKING__REDIS__PASSWORD=hunter2-secret",
			"HOSTLOOM_LOCKING__REDIS__DIAL_TIMEOUT=100ms",
			"HOSTLOOM_LOCKING__REDIS__READ_TIMEOUT=100ms",
		})),
		lockingfx.Module,
		fx.Supply(zap.New(core)),
		fx.Invoke(func(locking.Lock) {}),
	).RequireStart().RequireStop()
	all := logs.FilterMessage("HostLoomLock").All()
	if len(all) != 1 {
		t.Fatalf("%d HostLoomLock entries", len(all))
	}
	redisField := all[0].ContextMap()["redis"].(map[string]any)
	if redisField["password"] != "[redacted]" {
		t.Fatalf("logged password %v", redisField["password"])
	}
	for _, e := range logs.All() {
		if strings.Contains(fmt.Sprint(e.Message, e.ContextMap()), "hunter2") {
			t.Fatalf("a log entry shows the password: %v", e)
		}
	}
}

// aclUser creates user on srv with password pw and every permission.
func aclUser(t *testing.T, srv *redistest.Server, user, pw string) {
	t.Helper()
	if err := srv.Client(t).Do(context.Background(), "ACL", "SETUSER", user, "on", ">"+pw, "~*", "&*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
}

func TestModule_O4_AuthErrorIsAConfigurationError(t *testing.T) {
	const pw = "wrong-secret-4711"
	srv := redistest.Start(t)
	aclUser(t, srv, "app", "right-secret")
	for _, tt := range []struct {
		name, user, reply string
		env               []string
	}{
		{"WRONGPASS", "app", "WRONGPASS", []string{"HOSTLOOM_LOCKING__REDIS__USERNAME=app", "HOSTLOOM_LOCKING__REDIS__PASSWORD=" + pw}},
		{"unknown user", "nobody", "WRONGPASS", []string{"HOSTLOOM_LOCKING__REDIS__USERNAME=nobody", "HOSTLOOM_LOCKING__REDIS__PASSWORD=" + pw}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			app := fx.New(fx.NopLogger,
				configfx.Module("", config.WithEnviron(append([]string{
					"HOSTLOOM_LOCKING__PROVIDER=redis",
					"HOSTLOOM_LOCKING__REDIS__ADDRS=" + srv.Addr(),
				}, tt.env...))),
				lockingfx.Module,
				fx.Supply(zap.New(core)),
				fx.Invoke(func(locking.Lock) {}),
			)
			if err := app.Err(); err != nil {
				t.Fatal(err)
			}
			err := app.Start(context.Background())
			if err == nil {
				_ = app.Stop(context.Background())
				t.Fatal("start succeeded with credentials the server refuses")
			}
			want := fmt.Sprintf(`config: locking.redis.password: the server refused the credentials of user %q: %s`, tt.user, tt.reply)
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "(env HOSTLOOM_LOCKING__REDIS__PASSWORD)") {
				t.Errorf("start error\n%v\nwant it to contain\n%s (env HOSTLOOM_LOCKING__REDIS__PASSWORD)", err, want)
			}
			var fe *config.FieldError
			if !errors.As(err, &fe) || fe.Key != "locking.redis.password" {
				t.Errorf("start error is not a *config.FieldError for locking.redis.password: %v", err)
			}
			errs := logs.FilterLevelExact(zapcore.ErrorLevel).All()
			if len(errs) != 1 || errs[0].Message != "HostLoomLockAuthFailed" || errs[0].ContextMap()["user"] != tt.user {
				t.Fatalf("error entries %v, want one HostLoomLockAuthFailed naming user %q", errs, tt.user)
			}
			if n := logs.FilterMessage("HostLoomLockUnreachable").Len(); n != 0 {
				t.Errorf("the auth failure was also logged as an outage (%d entries)", n)
			}
			for _, e := range logs.All() {
				if strings.Contains(fmt.Sprint(e.Message, e.ContextMap()), pw) {
					t.Fatalf("a log entry shows the password: %v", e)
				}
			}
			if strings.Contains(err.Error(), pw) {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

func TestModule_O4_NoAuthIsAConfigurationError(t *testing.T) {
	srv := redistest.Start(t)
	if err := srv.Client(t).ConfigSet(context.Background(), "requirepass", "server-secret").Err(); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	app := fx.New(fx.NopLogger,
		configfx.Module("", config.WithEnviron([]string{
			"HOSTLOOM_LOCKING__PROVIDER=redis",
			"HOSTLOOM_LOCKING__REDIS__ADDRS=" + srv.Addr(),
		})),
		lockingfx.Module,
		fx.Supply(zap.New(core)),
		fx.Invoke(func(locking.Lock) {}),
	)
	err := app.Start(context.Background())
	if err == nil {
		_ = app.Stop(context.Background())
		t.Fatal("start succeeded without the password the server requires")
	}
	if !strings.Contains(err.Error(), `config: locking.redis.password: the server refused the credentials of user "default": NOAUTH`) ||
		!strings.Contains(err.Error(), "(default)") {
		t.Errorf("start error %v", err)
	}
	if n := logs.FilterMessage("HostLoomLockAuthFailed").Len(); n != 1 {
		t.Errorf("%d HostLoomLockAuthFailed entries, want 1", n)
	}
}

func TestModule_O4_RightCredentialsStart(t *testing.T) {
	srv := redistest.Start(t)
	aclUser(t, srv, "app", "right-secret")
	core, logs := observer.New(zapcore.DebugLevel)
	var got provided
	fxtest.New(t,
		configfx.Module("", config.WithEnviron([]string{
			"HOSTLOOM_LOCKING__PROVIDER=redis",
			"HOSTLOOM_LOCKING__REDIS__ADDRS=" + srv.Addr(),
			"HOSTLOOM_LOCKING__REDIS__USERNAME=app",
			"HOSTLOOM_LOCKING__REDIS__PASSWORD=right-secret",
		})),
		lockingfx.Module,
		fx.Supply(zap.New(core)),
		fx.Populate(&got),
	).RequireStart().RequireStop()
	if n := logs.FilterLevelExact(zapcore.ErrorLevel).Len() + logs.FilterLevelExact(zapcore.WarnLevel).Len(); n != 0 {
		t.Fatalf("%d warnings or errors for a server that accepts the credentials: %v", n, logs.All())
	}
}

func TestModule_O5_GoRedisLogGoesToZapAtDebug(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // no sentinel listens there
	core, logs := observer.New(zapcore.DebugLevel)
	fxtest.New(t,
		configfx.Module("", config.WithEnviron([]string{
			"HOSTLOOM_LOCKING__PROVIDER=redis",
			"HOSTLOOM_LOCKING__REDIS__ADDRS=" + addr,
			"HOSTLOOM_LOCKING__REDIS__MASTER_NAME=mymaster",
			"HOSTLOOM_LOCKING__REDIS__DIAL_TIMEOUT=200ms",
			"HOSTLOOM_LOCKING__REDIS__READ_TIMEOUT=200ms",
		})),
		lockingfx.Module,
		fx.Supply(zap.New(core)),
		fx.Invoke(func(locking.Lock) {}),
	).RequireStart().RequireStop()
	// The start check's PING asks the sentinel, which go-redis logs.
	lines := logs.FilterMessage("RedisClientLog").All()
	if len(lines) == 0 {
		t.Fatalf("no RedisClientLog entry; entries: %v", logs.All())
	}
	for _, e := range lines {
		if e.Level != zapcore.DebugLevel {
			t.Errorf("go-redis line at %v, want Debug: %v", e.Level, e.ContextMap())
		}
	}
	if !strings.Contains(fmt.Sprint(lines[0].ContextMap()["message"]), "sentinel") {
		t.Errorf("first go-redis line %v", lines[0].ContextMap())
	}
	warn := logs.FilterMessage("HostLoomLockUnreachable").All()
	if len(warn) != 1 || warn[0].Level != zapcore.WarnLevel {
		t.Fatalf("unreachable sentinel: %v, want one HostLoomLockUnreachable at Warn", warn)
	}
}

func TestRedisLogger_O5_Printf(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := lockingfx.NewRedisLogger(zap.New(core))
	l.Printf(context.Background(), "pool: %s after %d attempts", "dial failed", 3)
	e := logs.All()
	if len(e) != 1 || e[0].Level != zapcore.DebugLevel || e[0].Message != "RedisClientLog" || e[0].ContextMap()["message"] != "pool: dial failed after 3 attempts" {
		t.Fatalf("entries %v", e)
	}
	info, infoLogs := observer.New(zapcore.InfoLevel)
	lockingfx.NewRedisLogger(zap.New(info)).Printf(context.Background(), "hidden %d", 1)
	lockingfx.NewRedisLogger(nil).Printf(context.Background(), "to nowhere")
	if infoLogs.Len() != 0 {
		t.Fatalf("a Debug line reached an Info logger: %v", infoLogs.All())
	}
}

// TestModule_Q2_MinReplicasAboveTheServersWarnsAtStart: a standalone
// server has no replica; min_replicas 2 starts, and says once at Warn,
// naming the key, its source, both numbers and the consequence.
func TestModule_Q2_MinReplicasAboveTheServersWarnsAtStart(t *testing.T) {
	srv := redistest.Start(t)
	core, logs := observer.New(zapcore.InfoLevel)
	app := fxtest.New(t,
		configfx.Module("", config.WithEnviron([]string{
			"HOSTLOOM_LOCKING__PROVIDER=redis",
			"HOSTLOOM_LOCKING__REDIS__ADDRS=" + srv.Addr(),
			"HOSTLOOM_LOCKING__REDIS__MIN_REPLICAS=2",
		})),
		lockingfx.Module,
		fx.Supply(zap.New(core)),
		fx.Invoke(func(locking.Lock) {}),
	)
	app.RequireStart()
	defer app.RequireStop()
	warns := logs.FilterMessage("HostLoomMinReplicasUnmet").All()
	if len(warns) != 1 || warns[0].Level != zapcore.WarnLevel {
		t.Fatalf("HostLoomMinReplicasUnmet = %v, want once at Warn", warns)
	}
	f := warns[0].ContextMap()
	if f["key"] != "locking.redis.min_replicas" || f["min_replicas"] != int64(2) || f["replicas"] != int64(0) ||
		!strings.Contains(f["source"].(string), "HOSTLOOM_LOCKING__REDIS__MIN_REPLICAS") || !strings.Contains(f["consequence"].(string), "nobody can lead") {
		t.Fatalf("fields %v", f)
	}
}
