package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/lockingtest"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestCluster runs the Redis Cluster tests against one cluster of three
// masters started by the harness.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	t.Run("Conformance", func(t *testing.T) { testClusterConformance(t, cl) })
	t.Run("KeySlotMatchesServer", func(t *testing.T) { testClusterKeySlot(t, cl) })
	t.Run("L2_HashTagKeysOnNamespaceSlot_L7_ShardedNotification", func(t *testing.T) { testClusterHashTags(t, cl) })
	t.Run("L7_NotificationWithoutHashTags", func(t *testing.T) { testClusterNoHashTags(t, cl) })
}

// flushCluster empties every master.
func flushCluster(t *testing.T, c *redis.ClusterClient) {
	t.Helper()
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		return m.FlushAll(ctx).Err()
	})
	if err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
}

// testClusterConformance runs the conformance suite, emptying the cluster
// before every check.
func testClusterConformance(t *testing.T, cl *redistest.Cluster) {
	c := cl.Client(t)
	lockingtest.Run(t, lockingtest.Config{
		Short: redisShort,
		New: func(t *testing.T) lockingtest.Backend {
			flushCluster(t, c)
			// The restricted runs (L9) are the standalone suite's: the
			// provider code they exercise is the same here.
			return fullOnly{backend{c}}
		},
	})
}

// testClusterKeySlot compares the provider's slot computation, and the
// slots of its release channels, with the server's.
func testClusterKeySlot(t *testing.T, cl *redistest.Cluster) {
	ctx := context.Background()
	c := cl.Client(t)
	p := redislock.New(c)
	defer p.Close()
	keys := []string{
		"", "a", "foo", "{billing}:lock:x", "{}x", "x{}", "{a}{b}", "a{b}c{d}", "}{ab}",
		"{", "}", "a{b", "ключ", "{ключ}:x", "{billing}:lock:a}b{c", "plain:lock:]]--",
	}
	for _, k := range keys {
		want, err := c.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %q: %v", k, err)
		}
		if got := redislock.KeySlot(k); int64(got) != want {
			t.Errorf("keySlot(%q) = %d, CLUSTER KEYSLOT says %d", k, got, want)
		}
		if k != "" {
			m := redislock.MetaKey(k)
			if got, err := c.ClusterKeySlot(ctx, m).Result(); err != nil || got != want {
				t.Errorf("meta key %q of %q is in slot %d, the key in %d", m, k, got, want)
			}
		}
		if ch := redislock.ChannelOf(p, k); ch != "" {
			if got, err := c.ClusterKeySlot(ctx, ch).Result(); err != nil || got != want {
				t.Errorf("release channel %q of %q is in slot %d, the key in %d", ch, k, got, want)
			}
		}
	}
}

func testClusterHashTags(t *testing.T, cl *redistest.Cluster) {
	ctx := context.Background()
	c := cl.Client(t)
	flushCluster(t, c)
	o := locking.DefaultOptions()
	o.Namespace = "billing"
	o.UseHashTags = true
	holderP, waiterP := redislock.New(c), redislock.New(c)
	defer holderP.Close()
	defer waiterP.Close()
	holder, err := locking.New(holderP, o)
	if err != nil {
		t.Fatal(err)
	}
	waiter, err := locking.New(waiterP, o)
	if err != nil {
		t.Fatal(err)
	}
	nsSlot, err := c.ClusterKeySlot(ctx, "billing").Result()
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT billing: %v", err)
	}
	for _, key := range []string{"invoices", "leader:scheduler", "{elections}:scheduler", "a}b{c", "ключ"} {
		pkey, err := holder.ProviderKey(key)
		if err != nil {
			t.Fatal(err)
		}
		if slot, err := c.ClusterKeySlot(ctx, pkey).Result(); err != nil || slot != nsSlot {
			t.Fatalf("CLUSTER KEYSLOT %q = %d, %v; want the namespace's slot %d", pkey, slot, err, nsSlot)
		}
		released, stop := watchReleases(t, waiter, key)
		ls, err := holder.TryAcquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatalf("TryAcquire(%q): %v", key, err)
		}
		// The key is stored on the master that owns the namespace's slot.
		m, err := c.MasterForKey(ctx, pkey)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := m.Exists(ctx, pkey).Result(); err != nil || n != 1 {
			t.Fatalf("EXISTS %q on the slot's master = %d, %v", pkey, n, err)
		}
		if _, err := waiter.TryAcquire(ctx, key, time.Minute); err == nil {
			t.Fatalf("second TryAcquire(%q) succeeded", key)
		}
		// The waiter's subscription is a shard channel on that master.
		chans, err := m.PubSubShardChannels(ctx, "*").Result()
		if err != nil || len(chans) == 0 {
			t.Fatalf("PUBSUB SHARDCHANNELS on the slot's master = %v, %v; want the release channel", chans, err)
		}
		if err := ls.Release(ctx); err != nil {
			t.Fatalf("Release(%q): %v", key, err)
		}
		select {
		case <-released:
		case <-time.After(10 * time.Second):
			t.Fatalf("no sharded release notification for %q", key)
		}
		stop()
	}

	// A waiter in Acquire wakes when the holder releases.
	ls, err := holder.TryAcquire(ctx, "invoices", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		h, err := waiter.Acquire(ctx, "invoices", time.Minute)
		if err == nil {
			err = h.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire did not return after the release")
	}
}

func testClusterNoHashTags(t *testing.T, cl *redistest.Cluster) {
	ctx := context.Background()
	c := cl.Client(t)
	flushCluster(t, c)
	o := locking.DefaultOptions()
	o.Namespace = "plain"
	p := redislock.New(c)
	defer p.Close()
	l, err := locking.New(p, o)
	if err != nil {
		t.Fatal(err)
	}
	// Keys spread over slots (and so masters); each gets its notification.
	for _, key := range []string{"a", "b", "c", "d", "e", "f", "{x}y"} {
		released, stop := watchReleases(t, l, key)
		ls, err := l.TryAcquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatalf("TryAcquire(%q): %v", key, err)
		}
		if err := ls.Release(ctx); err != nil {
			t.Fatalf("Release(%q): %v", key, err)
		}
		select {
		case <-released:
		case <-time.After(10 * time.Second):
			t.Fatalf("no release notification for %q", key)
		}
		stop()
	}
}
