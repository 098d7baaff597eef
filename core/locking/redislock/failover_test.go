package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestCluster_G1_FencesIncreaseAcrossFailoverThatLostTheWrite takes a key
// (fence f), then takes it again while the shard's replica is cut off, and
// promotes that replica at once (CLUSTER FAILOVER TAKEOVER): the new master
// has lost both the second lease and its fence, so the key is free again,
// as after any failover of asynchronous replication; yet the next fence is
// larger than the lost one, so a store that checks fences refuses the
// deposed holder.
func TestCluster_G1_FencesIncreaseAcrossFailoverThatLostTheWrite(t *testing.T) {
	cl := redistest.StartClusterWithReplicas(t, 3, 1)
	c := cl.Client(t)
	ctx := context.Background()
	o := locking.DefaultOptions()
	o.Namespace = "billing"
	o.UseHashTags = true
	l, err := redislock.NewLock(c, o)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pkey, _ := l.ProviderKey("leader")
	meta := redislock.MetaKey(pkey)

	before := fence(t, l, "leader")
	m := masterFor(t, c, pkey)
	master := cl.NodeByAddr(redistest.MasterClientAddr(m))
	if master == nil {
		t.Fatalf("no node at %s", redistest.MasterClientAddr(m))
	}
	// The replica has everything so far.
	if err := m.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	replica := cl.ReplicaOf(t, master)
	var lost uint64 // the fence of the lease the failover loses
	cl.FailoverLosingWrites(t, master, replica, func() {
		ls, err := l.TryAcquireAs(ctx, "leader", time.Minute, "deposed")
		if err != nil {
			t.Fatalf("TryAcquireAs: %v", err)
		}
		lost = ls.(locking.Fenced).Fence()
	})
	if lost <= before {
		t.Fatalf("fence %d after %d, want larger", lost, before)
	}
	// The new master missed the write: it stores the earlier fence.
	rc := replica.NewClient()
	stored, err := rc.HGet(ctx, meta, "fence").Uint64()
	_ = rc.Close()
	if err != nil || stored != before {
		t.Fatalf("HGET fence on the new master = %d, %v; want the fence before the lost write, %d", stored, err, before)
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

// masterFor returns the client of key's master once the cluster client's
// view agrees with the node itself (after a takeover the view is stale
// until reloaded).
func masterFor(t *testing.T, c *redis.ClusterClient, key string) *redis.Client {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c.ReloadState(ctx)
		m, err := c.MasterForKey(ctx, key)
		if err == nil {
			role, rerr := m.Do(ctx, "ROLE").Slice()
			if rerr == nil && len(role) > 0 && role[0] == "master" {
				return m
			}
			err = rerr
		}
		if time.Now().After(deadline) {
			t.Fatalf("no master for %q: %v", key, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
