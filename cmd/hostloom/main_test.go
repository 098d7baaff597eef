package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	code := m.Run()
	stopPostgres()
	stopEtcd()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// result is what one run of the CLI returned and wrote.
type result struct {
	code        int
	out, errOut string
}

// cli runs the CLI in process with no environment variables, so only the
// arguments configure it.
func cli(t *testing.T, args ...string) result {
	t.Helper()
	return cliWith(t, stdio{}, args...)
}

func cliWith(t *testing.T, sio stdio, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	if sio.in == nil {
		sio.in = strings.NewReader("")
	}
	sio.out, sio.err = &out, &errOut
	code := run(ctx, args, sio)
	t.Logf("hostloom %s → exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return result{code: code, out: out.String(), errOut: errOut.String()}
}

// timing of the electors in these tests: sub-second leases, so handovers
// after a crash are quick in real time.
func testOptions() leadership.Options {
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = time.Second, 300*time.Millisecond, 500*time.Millisecond
	return o
}

// configSpec is what a test's app.yaml says.
type configSpec struct {
	addr, namespace string
	provider        string // default redis
	password        string // default none
	lease           string // default 1s
	cluster         bool   // Redis Cluster over addrs (addr unused)
	addrs           []string
}

// writeConfig writes the YAML file the service and the CLI share.
func writeConfig(t testing.TB, addr, namespace string) string {
	t.Helper()
	return writeSpec(t, configSpec{addr: addr, namespace: namespace})
}

func writeSpec(t testing.TB, c configSpec) string {
	t.Helper()
	if c.provider == "" {
		c.provider = "redis"
	}
	if c.lease == "" {
		c.lease = "1s"
	}
	password := ""
	if c.password != "" {
		password = "\n    password: " + c.password
	}
	yaml := fmt.Sprintf(`locking:
  provider: %s
  namespace: %s
  redis:
    addrs: [%q]
    dial_timeout: 2s%s
leadership:
  lease: %s
  renew_interval: 300ms
  retry_interval: 500ms
`, c.provider, c.namespace, c.addr, password, c.lease)
	if c.cluster {
		yaml = strings.Replace(yaml, "    dial_timeout: 2s", "    cluster: true\n    dial_timeout: 2s", 1)
		yaml = strings.Replace(yaml, fmt.Sprintf("[%q]", c.addr), "["+strings.Join(c.addrs, ", ")+"]", 1)
	}
	path := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// replica is one simulated service process: its own client, lock and
// elector for one role.
type replica struct {
	lock     *locking.DistributedLock
	elector  *leadership.Elector
	identity string
}

func startReplica(t testing.TB, srv *redistest.Server, namespace, role, identity string) *replica {
	t.Helper()
	return startReplicaOn(t, srv.NewClient(), namespace, role, identity)
}

// startReplicaOn is startReplica over any client, which it closes.
func startReplicaOn(t testing.TB, c redis.UniversalClient, namespace, role, identity string) *replica {
	t.Helper()
	o := locking.DefaultOptions()
	o.Namespace = namespace
	lock, err := redislock.NewLock(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return startElector(t, lock, role, identity, func() { _ = c.Close() })
}

// startElector starts a replica's elector for role over lock; at the end
// of the test it stops it, closes lock and calls closeClient. It returns
// once the elector's subscription to the lock's events is live: resign
// sends its request over that channel, and a leader whose subscription is
// not up yet (it may lead a moment before) does not hear it.
func startElector(t testing.TB, lock *locking.DistributedLock, role, identity string, closeClient func()) *replica {
	t.Helper()
	e, err := leadership.NewElector(role, lock, testOptions(), leadership.WithIdentity(identity))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopReplica(t, e, identity)
		_ = lock.Close()
		closeClient()
	})
	for deadline := time.Now().Add(30 * time.Second); !leadership.Describe(e).Subscribed; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the elector's subscription was not live within 30s", identity)
		}
	}
	return &replica{lock: lock, elector: e, identity: identity}
}

// stopReplica stops a replica's elector at the end of a test. Its Stop
// may find the lease gone: release --force deletes it, and the holder
// learns so from its next renewal or from the release itself.
func stopReplica(t testing.TB, e *leadership.Elector, identity string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Stop(ctx); err != nil && !errors.Is(err, locking.ErrLeaseLost) {
		t.Errorf("stop %s: %v", identity, err)
	}
}

// leaderOf waits until one of the replicas leads and returns it.
func leaderOf(t testing.TB, rs ...*replica) *replica {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range rs {
			if r.elector.IsLeader() {
				return r
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no replica leads after 10s")
	return nil
}

// waitFor polls cond until it holds or 10s passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, s)
	}
	return v
}
