package redistest_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/testing/redistest"
)

// launch starts a server with Launch, skipping or failing like Start when
// there is no server binary, and stops it when the test ends.
func launch(t *testing.T, o redistest.Options) *redistest.Server {
	t.Helper()
	s, err := redistest.Launch(o)
	if errors.Is(err, redistest.ErrNoServer) && !redistest.Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func TestLaunch_ArgsAndKeptDir(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	s := launch(t, redistest.Options{Dir: parent, Args: []string{"--maxclients", "1234"}})
	if filepath.Dir(s.Dir()) != parent {
		t.Fatalf("Dir = %q, want a directory under %q", s.Dir(), parent)
	}
	c := s.Client(t)
	if cfg, err := c.ConfigGet(ctx, "maxclients").Result(); err != nil || cfg["maxclients"] != "1234" {
		t.Fatalf("CONFIG GET maxclients = %v, %v; want 1234 from Options.Args", cfg, err)
	}
	s.Stop()
	// A directory under Options.Dir is the caller's: kept for a post-mortem.
	if _, err := os.Stat(filepath.Join(s.Dir(), "server.log")); err != nil {
		t.Fatalf("server.log after Stop: %v; want it kept under Options.Dir", err)
	}
}

func TestLaunch_TempDirRemovedByStop(t *testing.T) {
	s := launch(t, redistest.Options{})
	s.Stop()
	if _, err := os.Stat(s.Dir()); !os.IsNotExist(err) {
		t.Fatalf("Stat(%s) after Stop = %v; want the temporary directory removed", s.Dir(), err)
	}
}

func TestRelaunch_EmptyServerOnSamePort(t *testing.T) {
	ctx := context.Background()
	s := launch(t, redistest.Options{})
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if err := s.Relaunch(); err != nil {
		t.Fatalf("Relaunch: %v", err)
	}
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS k after Relaunch = %d, %v; want 0, nil (nothing persisted)", n, err)
	}
}

func TestSignal_StopAndContinue(t *testing.T) {
	ctx := context.Background()
	s := launch(t, redistest.Options{})
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, ReadTimeout: 200 * time.Millisecond})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("Signal(SIGSTOP): %v", err)
	}
	var ne net.Error
	if err := c.Ping(ctx).Err(); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("PING to a stopped server = %v, want a timeout", err)
	}
	if err := s.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("Signal(SIGCONT): %v", err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after SIGCONT: %v", err)
	}
	s.Kill()
	if err := s.Signal(syscall.SIGCONT); err == nil || !strings.Contains(err.Error(), s.Addr()) {
		t.Fatalf("Signal on a killed server = %v, want an error naming %s", err, s.Addr())
	}
}

func TestLaunch_BadBinIsAnError(t *testing.T) {
	_, err := redistest.Launch(redistest.Options{Bin: "/nonexistent/redis-server"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/redis-server") {
		t.Fatalf("Launch = %v, want an error naming the binary", err)
	}
}

func TestLaunchCluster_RejectsBadShape(t *testing.T) {
	for _, o := range []redistest.ClusterOptions{{Masters: 2}, {Masters: 3, ReplicasPerMaster: -1}} {
		if _, err := redistest.LaunchCluster(o); err == nil {
			t.Errorf("LaunchCluster(%+v) = nil error", o)
		}
	}
}

func TestLaunchCluster_ReplicasInSync(t *testing.T) {
	if _, err := redistest.CLIBinary(); err != nil && !redistest.Required() {
		t.Skip(err)
	}
	ctx := context.Background()
	c, err := redistest.LaunchCluster(redistest.ClusterOptions{Masters: 3, ReplicasPerMaster: 1, NodeTimeout: time.Second, Dir: t.TempDir()})
	if errors.Is(err, redistest.ErrNoServer) && !redistest.Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if got := len(c.Nodes()); got != 6 {
		t.Fatalf("%d nodes, want 6", got)
	}
	replicas := 0
	for _, n := range c.Nodes() {
		if c.Node(n.Addr()) != n {
			t.Fatalf("Node(%s) is not that node", n.Addr())
		}
		info, err := n.Client(t).Info(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info, "role:slave") {
			replicas++
		}
	}
	if replicas != 3 {
		t.Fatalf("%d replicas, want 3", replicas)
	}
	if c.Node("127.0.0.1:1") != nil {
		t.Fatal("Node of an unknown address is not nil")
	}
	// A killed master's replica is promoted, and the old master comes back
	// as a replica: the cluster is healthy again.
	cl := c.Client(t)
	if err := cl.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	m, err := cl.MasterForKey(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	old := c.Node(m.Options().Addr)
	old.Kill()
	if err := old.Relaunch(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.WaitHealthy(wctx); err != nil {
		t.Fatalf("after a master's restart: %v", err)
	}
}

func TestLaunchSentinel_Options(t *testing.T) {
	ctx := context.Background()
	master := launch(t, redistest.Options{})
	s, err := redistest.LaunchSentinel(redistest.SentinelOptions{Master: master.Addr(), Name: "m1", Quorum: 2, DownAfter: 1500 * time.Millisecond, FailoverTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
	defer sc.Close()
	fields, err := sc.Master(ctx, "m1").Result()
	if err != nil {
		t.Fatalf("SENTINEL MASTER m1: %v", err)
	}
	want := map[string]string{"quorum": "2", "down-after-milliseconds": "1500", "failover-timeout": "10000",
		"ip": "127.0.0.1", "port": strings.TrimPrefix(master.Addr(), "127.0.0.1:")}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("SENTINEL MASTER m1 %s = %q, want %q", k, fields[k], v)
		}
	}
	if _, err := redistest.LaunchSentinel(redistest.SentinelOptions{Master: "no-port"}); err == nil || !strings.Contains(err.Error(), "no-port") {
		t.Fatalf("LaunchSentinel with a bad master = %v, want an error naming it", err)
	}
}

// TestStart_RunsTheSelectedBinary checks that the server a test gets is the
// binary HOSTLOOM_REDIS_SERVER names (CI runs the Redis tests a second time
// with it set to valkey-server), by asking the server for its executable.
func TestStart_RunsTheSelectedBinary(t *testing.T) {
	bin, err := redistest.ServerBinary()
	if errors.Is(err, redistest.ErrNoServer) && !redistest.Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(redistest.ServerEnv, bin)
	s := redistest.Start(t)
	info, err := s.Client(t).Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if exe, ok := strings.CutPrefix(strings.TrimSpace(line), "executable:"); ok {
			if got, err := filepath.EvalSymlinks(exe); err != nil || got != want {
				t.Fatalf("server executable = %q (%v), want %q", exe, err, want)
			}
			t.Logf("%s: %s", redistest.ServerEnv, bin)
			return
		}
	}
	t.Fatalf("INFO server has no executable field:\n%s", info)
}
