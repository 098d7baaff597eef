package leadership_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

func priorityOpts(p int) leadership.Options {
	o := fastOpts() // lease 3s, renew 1s, retry 2s
	o.Priority = p
	return o
}

// A higher-priority participant takes over at the leader's first renewal
// after it has been live for a full lease (B2).
func TestElector_B2_PreemptsAfterALease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		low := mustElector(t, "r", lock, priorityOpts(0), leadership.WithIdentity("low"))
		mustStart(t, low)
		defer mustStop(t, low)
		synctest.Wait()
		high := mustElector(t, "r", lock, priorityOpts(5), leadership.WithIdentity("high"))
		joined := time.Now()
		mustStart(t, high)
		defer mustStop(t, high)
		time.Sleep(3*time.Second - time.Millisecond) // live for just under a lease
		synctest.Wait()
		if !low.IsLeader() {
			t.Fatal("preempted before the higher priority was live for a full lease")
		}
		if err := high.WaitForLeadership(bg); err != nil {
			t.Fatal(err)
		}
		took := time.Since(joined)
		if took < 3*time.Second || took > 3*time.Second+time.Second {
			t.Fatalf("high took over %v after joining; want within one RenewInterval (1s) after a lease (3s)", took)
		}
		if low.IsLeader() {
			t.Fatal("two leaders")
		}
		// The lower priority does not take it back.
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if !high.IsLeader() || low.IsLeader() {
			t.Fatalf("high %v, low %v after 30s; want high to keep it", high.IsLeader(), low.IsLeader())
		}
	})
}

// Among candidates for a free role, the higher priority takes it (B2).
func TestElector_B2_HigherPriorityWinsAFreeRole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := memLock(t)
		holder := mustElector(t, "r", lock, priorityOpts(0), leadership.WithIdentity("holder"))
		mustStart(t, holder)
		synctest.Wait()
		low := mustElector(t, "r", lock, priorityOpts(1), leadership.WithIdentity("low"))
		high := mustElector(t, "r", lock, priorityOpts(9), leadership.WithIdentity("high"))
		mustStart(t, low)
		defer mustStop(t, low)
		mustStart(t, high)
		defer mustStop(t, high)
		synctest.Wait()
		mustStop(t, holder) // the role is free; both candidates wake
		synctest.Wait()
		if !high.IsLeader() || low.IsLeader() {
			t.Fatalf("high %v, low %v; want the higher priority to take the free role", high.IsLeader(), low.IsLeader())
		}
	})
}

func TestElector_B2_Redis_Preempts(t *testing.T) {
	srv := redistest.Start(t)
	o := redisOpts() // lease 1s, renew 300ms, retry 500ms
	lowOpts, highOpts := o, o
	highOpts.Priority = 7
	lowNode, highNode := newRedisNode(t, srv), newRedisNode(t, srv)
	low := mustElector(t, "b2", lowNode.lock, lowOpts, leadership.WithIdentity("low"))
	mustStart(t, low)
	defer mustStop(t, low)
	waitFor(t, low.IsLeader)
	high := mustElector(t, "b2", highNode.lock, highOpts, leadership.WithIdentity("high"))
	joined := time.Now()
	mustStart(t, high)
	defer mustStop(t, high)
	waitFor(t, high.IsLeader)
	t.Logf("the higher priority led %v after joining (lease %v, renew %v)", time.Since(joined), o.Lease, o.RenewInterval)
	if time.Since(joined) < o.Lease {
		t.Fatalf("preempted after %v, before the higher priority was live for a lease", time.Since(joined))
	}
	if low.IsLeader() {
		t.Fatal("two leaders")
	}
	ps, err := low.Participants(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Identity == "high" && !p.Leader {
			t.Fatalf("participants %+v: high should lead", ps)
		}
	}
}
