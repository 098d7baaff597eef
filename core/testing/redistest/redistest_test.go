package redistest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/testing/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStart_PingSetRestart(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr = %q, want 127.0.0.1:port", s.Addr())
	}
	c := s.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v; want v", got, err)
	}
	// No persistence: the config says so.
	if cfg, err := c.ConfigGet(ctx, "appendonly").Result(); err != nil || cfg["appendonly"] != "no" {
		t.Fatalf("CONFIG GET appendonly = %v, %v; want no", cfg, err)
	}
	if cfg, err := c.ConfigGet(ctx, "save").Result(); err != nil || cfg["save"] != "" {
		t.Fatalf("CONFIG GET save = %v, %v; want empty", cfg, err)
	}

	s.Restart(t)
	if !s.Running() {
		t.Fatal("Running = false after Restart")
	}
	// The client reconnects to the same port and finds an empty data set.
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS k after restart = %d, %v; want 0, nil", n, err)
	}
}

func TestKill_ServerDownUntilRestart(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	s.Kill()
	if s.Running() {
		t.Fatal("Running = true after Kill")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded against a killed server")
	}
	s.Restart(t)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after restart: %v", err)
	}
	s.Stop()
	s.Stop() // idempotent
	if s.Running() {
		t.Fatal("Running = true after Stop")
	}
}

func TestStartMain_StopEndsServer(t *testing.T) {
	s, stop, err := redistest.StartMain()
	if err != nil {
		if redistest.Required() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	stop()
	if err := c.Ping(context.Background()).Err(); err == nil {
		t.Fatal("PING succeeded after stop")
	}
}

func TestStartCluster_ThreeMastersServeAllSlots(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	if got := len(cl.Addrs()); got != 3 {
		t.Fatalf("len(Addrs) = %d, want 3", got)
	}
	c := cl.Client(t)
	// Keys spread over slots owned by different masters all work.
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "{ns}:x", "{ns}:y"} {
		if err := c.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS: %v", err)
	}
	if len(shards) != 3 {
		t.Fatalf("CLUSTER SHARDS = %d shards, want 3", len(shards))
	}
	// The keys really are spread: more than one node holds some.
	holding := 0
	for _, n := range cl.Nodes() {
		nc := n.Client(t)
		size, err := nc.DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("DBSIZE on %s: %v", n.Addr(), err)
		}
		if size > 0 {
			holding++
		}
	}
	if holding < 2 {
		t.Fatalf("%d nodes hold keys, want at least 2", holding)
	}
}

// recordingTB records how Start gave up instead of ending the real test.
type recordingTB struct {
	testing.TB
	fatal, skip string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Fatal(args ...any) {
	r.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recordingTB) Skip(args ...any) {
	r.skip = fmt.Sprint(args...)
	runtime.Goexit()
}

// startWithout runs Start with an empty PATH in its own goroutine.
func startWithout(t *testing.T) *recordingTB {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(redistest.ServerEnv, "")
	r := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		redistest.Start(r)
		t.Error("Start returned without redis-server on PATH")
	}()
	<-done
	return r
}

func TestStart_MissingServerSkipsLocally(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv("HOSTLOOM_REQUIRE_REDIS", "")
	r := startWithout(t)
	if r.fatal != "" || !strings.Contains(r.skip, "redis-server not found: install redis-server") {
		t.Fatalf("skip = %q, fatal = %q; want a skip naming redis-server", r.skip, r.fatal)
	}
}

func TestStart_MissingServerFailsWhenRequired(t *testing.T) {
	for _, env := range [][2]string{{"CI", "true"}, {"HOSTLOOM_REQUIRE_REDIS", "1"}} {
		t.Run(env[0], func(t *testing.T) {
			t.Setenv("CI", "")
			t.Setenv("HOSTLOOM_REQUIRE_REDIS", "")
			t.Setenv(env[0], env[1])
			r := startWithout(t)
			if r.skip != "" || !strings.Contains(r.fatal, "redis-server not found") {
				t.Fatalf("skip = %q, fatal = %q; want a failure naming redis-server", r.skip, r.fatal)
			}
		})
	}
}

func TestStartSentinel_FailoverClientReachesMaster(t *testing.T) {
	ctx := context.Background()
	master := redistest.Start(t)
	sentinel := redistest.StartSentinel(t, master)
	c := redistest.FailoverClient(t, sentinel)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through Sentinel: %v", err)
	}
	if got, err := master.Client(t).Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET on the master = %q, %v; want the value written through Sentinel", got, err)
	}
}

func TestStart_MisconfiguredServerEnvFails(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv("HOSTLOOM_REQUIRE_REDIS", "")
	t.Setenv(redistest.ServerEnv, "/nonexistent/valkey-server")
	r := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		redistest.Start(r)
		t.Error("Start returned with a missing server binary")
	}()
	<-done
	if r.skip != "" || !strings.Contains(r.fatal, "/nonexistent/valkey-server") {
		t.Fatalf("skip = %q, fatal = %q; want a failure naming the configured binary", r.skip, r.fatal)
	}
	_, _, err := redistest.StartMain()
	if err == nil || !strings.Contains(err.Error(), redistest.ServerEnv) || !strings.Contains(err.Error(), "/nonexistent/valkey-server") {
		t.Fatalf("StartMain = %v, want an error naming %s and its value", err, redistest.ServerEnv)
	}
}
