package scheduling_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestScheduler_S8_RedisCatchUpAllAcrossFailover: two schedulers over one
// redis-server; a leads, loses, and b leads 350ms later with CatchUpAll:
// b runs every slot nobody started since a's last one, oldest first, one
// at a time, and no slot runs twice.
func TestScheduler_S8_RedisCatchUpAllAcrossFailover(t *testing.T) {
	srv := redistest.Start(t)
	store := redisStore(t, srv)
	ctx := context.Background()
	var mu sync.Mutex
	runs := map[string][]int64{} // slots by replica, in start order
	slots := make(map[int64]int)
	job := func(who string) func(context.Context) error {
		return func(ctx context.Context) error {
			slot, _ := scheduling.SlotFrom(ctx)
			mu.Lock()
			runs[who] = append(runs[who], slot.UnixMilli())
			slots[slot.UnixMilli()]++
			mu.Unlock()
			return nil
		}
	}
	fa, fb := leadershiptest.NewFake("billing"), leadershiptest.NewFake("billing")
	var ss []*scheduling.Scheduler
	for _, r := range []struct {
		f   *leadershiptest.Fake
		who string
	}{{fa, "a"}, {fb, "b"}} {
		// The window is far longer than the gap, also on a loaded machine.
		s, err := scheduling.New(r.f, scheduling.WithSlotStore(store), scheduling.WithMisfireWindow(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		mustAdd(t, s, scheduling.Job{Name: "catchup", Schedule: scheduling.Every(100 * time.Millisecond), CatchUp: scheduling.CatchUpAll, Run: job(r.who)})
		ss = append(ss, s)
	}
	fa.SetLeader(true)
	for _, s := range ss {
		mustStart(t, s)
	}
	time.Sleep(time.Second)
	fa.SetLeader(false)
	time.Sleep(350 * time.Millisecond)
	tb := time.Now().UnixMilli()
	fb.SetLeader(true)
	time.Sleep(600 * time.Millisecond)
	for _, s := range ss {
		if err := s.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for slot, n := range slots {
		if n != 1 {
			t.Errorf("slot %d ran %d times", slot, n)
		}
	}
	a, b := runs["a"], runs["b"]
	if len(a) == 0 || len(b) == 0 {
		t.Fatalf("runs: a %v, b %v", a, b)
	}
	// b first runs, in order, every slot after a's last one that fell due
	// before b led (its catch-up), then its own.
	var want []int64
	for slot := a[len(a)-1] + 100; slot <= tb; slot += 100 {
		want = append(want, slot)
	}
	if len(want) < 3 || len(b) < len(want) || !slices.Equal(b[:len(want)], want) {
		t.Errorf("b ran %v; want it to start with the slots nobody started, %v", b, want)
	}
	if !slices.IsSorted(b) {
		t.Errorf("b ran %v, not in slot order", b)
	}
}

// childEnv names the redis-server address a child replica process of
// TestScheduler_S9_RedisKilledReplica connects to.
const childEnv = "HOSTLOOM_TEST_SCHED_CHILD_REDIS"

// recoverReplica is one replica of the kill test: an elector (lease 1s)
// over Redis and a scheduler with an hourly Recover job that catches up
// the current hour's slot. The job marks its start (and end, unless block)
// in the Redis list "marks".
func recoverReplica(t *testing.T, addr, id string, block bool) (*leadership.Elector, *scheduling.Scheduler, *redis.Client) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	o := locking.DefaultOptions()
	o.Namespace = "recover"
	lock, err := redislock.NewLock(c, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Close(); _ = c.Close() })
	lo := leadership.DefaultOptions()
	lo.Lease, lo.RenewInterval, lo.RetryInterval = time.Second, 300*time.Millisecond, 100*time.Millisecond
	e, err := leadership.NewElector("billing", lock, lo, leadership.WithIdentity(id))
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduling.New(e, scheduling.WithSlotStore(lock), scheduling.WithMisfireWindow(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, scheduling.Job{Name: "hourly", Schedule: scheduling.Every(time.Hour), Recover: true, Run: func(ctx context.Context) error {
		slot, _ := scheduling.SlotFrom(ctx)
		attempt, _ := scheduling.AttemptFrom(ctx)
		mark := func(what string) error {
			return c.RPush(context.WithoutCancel(ctx), "marks", fmt.Sprintf("%s %s %d %d", id, what, slot.UnixMilli(), attempt)).Err()
		}
		if err := mark("start"); err != nil {
			return err
		}
		if block {
			select {} // until the process is killed
		}
		return mark("done")
	}})
	return e, s, c
}

// TestScheduler_S9_RedisKilledReplicaChild is the child replica of
// TestScheduler_S9_RedisKilledReplica; it does nothing unless started by
// it.
func TestScheduler_S9_RedisKilledReplicaChild(t *testing.T) {
	addr := os.Getenv(childEnv)
	if addr == "" {
		t.Skip("runs only as the child process of TestScheduler_S9_RedisKilledReplica")
	}
	e, s, _ := recoverReplica(t, addr, "child", true)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {} // until the parent kills the process
}

// TestScheduler_S9_RedisKilledReplica: a replica process is killed (SIGKILL)
// in the middle of a Recover job's run; the next leader runs the slot again
// as attempt 2, once its predecessor's lease has run out, and the slot
// runs to completion exactly once across the two processes.
func TestScheduler_S9_RedisKilledReplica(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	cmd := exec.Command(os.Args[0], "-test.run=^TestScheduler_S9_RedisKilledReplicaChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+srv.Addr())
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	c := srv.Client(t)
	marks := func() []string {
		t.Helper()
		m, err := c.LRange(ctx, "marks", 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	waitFor := func(what string, n int) []string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			if m := marks(); len(m) >= n {
				return m
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 20s; marks %v; child output:\n%s", what, marks(), out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("start in the child", 1)
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no Stop, no release, no completion
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true

	e, s, _ := recoverReplica(t, srv.Addr(), "parent", false)
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	m := waitFor("completed recovery", 3)
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Truncate(time.Hour).UnixMilli()
	if m[0] != fmt.Sprintf("child start %d 1", slot) {
		// The hour turned during the test: the slot is the previous one.
		slot -= time.Hour.Milliseconds()
	}
	want := []string{
		fmt.Sprintf("child start %d 1", slot),
		fmt.Sprintf("parent start %d 2", slot),
		fmt.Sprintf("parent done %d 2", slot),
	}
	if got := marks(); !slices.Equal(got, want) {
		t.Errorf("marks = %v, want %v", got, want)
	}

	h, err := s.History(ctx, "hourly", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 {
		t.Fatalf("history = %+v, want two runs", h)
	}
	second, first := h[0], h[1]
	if second.Identity != "parent" || second.Attempt != 2 || second.Outcome != scheduling.Success || second.Ended.IsZero() {
		t.Errorf("newest run = %+v, want parent's successful attempt 2", second)
	}
	if first.Identity != "child" || first.Attempt != 1 || first.Outcome != 0 || !first.Ended.IsZero() {
		t.Errorf("older run = %+v, want child's attempt 1, never ended", first)
	}
	// The recovery started no sooner than the child's lease (1s) after its
	// claim; fences are 0 until leadership exposes them to runs, and must
	// grow once it does.
	if d := second.Started.Sub(first.Started); d < 900*time.Millisecond {
		t.Errorf("recovery started %v after the killed attempt, want at least the 1s lease", d)
	}
	if first.Fence != 0 && second.Fence <= first.Fence {
		t.Errorf("fences: attempt 1 %d, attempt 2 %d; want a larger one", first.Fence, second.Fence)
	}
}
