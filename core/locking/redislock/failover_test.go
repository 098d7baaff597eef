package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/internal/redistest"
)

// TestCluster_G1_FencesIncreaseAcrossFailoverThatLostTheWrite takes a key
// (fence f), cuts the replication link of its shard's replica, takes the
// key again so only the master stores the new lease and fence, and
// promotes the replica at once (CLUSTER FAILOVER TAKEOVER). The new master
// has lost both the lease and the fence: the key is free again, as after
// any asynchronous-replication failover, yet its next fence is larger than
// the lost one, so a store that checks fences refuses the deposed holder.
func TestCluster_G1_FencesIncreaseAcrossFailoverThatLostTheWrite(t *testing.T) {
	cl := redistest.StartClusterWithReplicas(t, 3, 1)
	c := cl.Client(t)
	ctx := context.Background()
	o := locking.DefaultOptions()
	o.Namespace = "billing"
	o.UseHashTags = true
	l, p, err := redislock.NewLock(c, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pkey, _ := l.ProviderKey("leader")
	meta := redislock.MetaKey(pkey)

	var lost uint64 // the fence of the lease the failover lost
	for attempt := 1; ; attempt++ {
		before := fence(t, l, "leader")
		m, err := c.MasterForKey(ctx, pkey)
		if err != nil {
			t.Fatal(err)
		}
		master := cl.NodeByAddr(redistest.MasterClientAddr(m))
		if master == nil {
			t.Fatalf("no node at %s", redistest.MasterClientAddr(m))
		}
		// Let the replica catch up with everything so far.
		if err := m.Do(ctx, "WAIT", 1, 2000).Err(); err != nil {
			t.Fatal(err)
		}
		replica := cl.ReplicaOf(t, master)

		redistest.CutReplication(t, replica)
		ls, err := l.TryAcquireAs(ctx, "leader", time.Minute, "deposed")
		if err != nil {
			t.Fatalf("TryAcquireAs: %v", err)
		}
		lost = ls.(locking.Fenced).Fence()
		if lost <= before {
			t.Fatalf("fence %d after %d, want larger", lost, before)
		}
		cl.Takeover(t, replica)

		// Did the new master miss the write? (The replica may have
		// reconnected first: then try again.)
		rc := replica.NewClient()
		stored, err := rc.HGet(ctx, meta, "fence").Uint64()
		_ = rc.Close()
		if err != nil {
			t.Fatalf("HGET fence on the new master: %v", err)
		}
		if stored < lost {
			t.Logf("attempt %d: the new master stores fence %d, the lost lease had %d", attempt, stored, lost)
			break
		}
		if attempt == 5 {
			t.Fatalf("the replica received the write before every takeover in %d attempts", attempt)
		}
		if err := ls.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}

	// The lease was lost with the write: a new holder gets the key, with a
	// larger fence than the deposed holder's.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ls, err := l.TryAcquireAs(ctx, "leader", time.Minute, "successor")
		if err == nil {
			if f := ls.(locking.Fenced).Fence(); f <= lost {
				t.Fatalf("fence %d after the failover, want more than the lost %d", f, lost)
			}
			break
		}
		if errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("the key is still held after a failover that lost the lease: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("TryAcquireAs after the failover: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
