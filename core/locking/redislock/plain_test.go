package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// commandCounts returns the server's calls per command (INFO
// commandstats, which counts the commands scripts run too) after
// resetting them; call it again for the delta.
func commandCounts(t *testing.T, c *redis.Client) map[string]int {
	t.Helper()
	ctx := context.Background()
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int)
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		if err != nil {
			t.Fatalf("commandstats line %q: %v", line, err)
		}
		out[strings.ToUpper(strings.TrimPrefix(name, "cmdstat_"))] = n
	}
	// The INFO and CONFIG of the reading itself.
	delete(out, "INFO")
	delete(out, "CONFIG|RESETSTAT")
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// A plain lock user's acquire+release costs the server eight commands
// (EVALSHA, SET NX GET, HINCRBY, TIME and HSET for the fence; EVALSHA, MGET,
// DEL) and a refusal three (the holder's TTL is part of the refusal, L3),
// and a release nobody listens to publishes nothing. TIME and HSET are the
// price of fences that keep increasing after a failover to a stale replica
// (G1; TestProvider_G1_PlainFenceAfterAStaleFailover).
func TestProvider_L3_PlainLockCommandsPerOperation(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	l, err := redislock.NewLock(c, locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	// Warm: the script is loaded and the key's fence stored.
	ls, err := l.TryAcquire(ctx, "job", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 20
	commandCounts(t, c)
	for range n {
		ls, err := l.TryAcquire(ctx, "job", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := ls.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := commandCounts(t, c)
	if total(got) != 8*n || got["PUBLISH"] != 0 {
		t.Fatalf("%d acquire+release ran %v (%d commands), want %d and no PUBLISH", n, got, total(got), 8*n)
	}

	holder, err := l.TryAcquire(ctx, "job", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	commandCounts(t, c)
	for range n {
		if _, err := l.TryAcquire(ctx, "job", time.Minute); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("TryAcquire of a held key = %v, want a HeldError", err)
		}
	}
	got = commandCounts(t, c)
	if total(got) != 3*n || got["PTTL"] != n {
		t.Fatalf("%d refused acquires ran %v (%d commands), want %d", n, got, total(got), 3*n)
	}
	_ = holder.Release(ctx)
}

// Releases reach a subscriber of a plain lock's key (the subscription
// marks the key), and an elector's lease is announced without one.
func TestProvider_L7_ReleasePublishedOnlyWhenListened(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	p := redislock.New(c)
	defer p.Close()
	ctx := context.Background()
	publishes := func(r locking.ReleaseRequest) int {
		t.Helper()
		if ok, _, err := acquireRaw(p, ctx, r.Key, r.Value, time.Minute); !ok || err != nil {
			t.Fatalf("Acquire(%q) = %v, %v", r.Key, ok, err)
		}
		commandCounts(t, c)
		if ok, err := p.Release(ctx, r); !ok || err != nil {
			t.Fatalf("Release(%q) = %v, %v", r.Key, ok, err)
		}
		return commandCounts(t, c)["PUBLISH"]
	}
	if n := publishes(locking.ReleaseRequest{Key: "quiet", Value: "v"}); n != 0 {
		t.Fatalf("release without listeners published %d times", n)
	}
	if n := publishes(locking.ReleaseRequest{Key: "quiet", Value: "v", Notify: true}); n != 1 {
		t.Fatalf("release with Notify published %d times, want 1", n)
	}
	if n := publishes(locking.ReleaseRequest{Key: "quiet", Value: "v", Target: "b"}); n != 1 {
		t.Fatalf("handover published %d times, want 1", n)
	}

	// A subscriber in another provider (another process) hears a plain
	// release.
	listener := redislock.New(c)
	defer listener.Close()
	events, stop := providerEvents(t, listener, "watched")
	defer stop()
	waitEvent(t, events, locking.EventSubscribed)
	if n := publishes(locking.ReleaseRequest{Key: "watched", Value: "v"}); n != 1 {
		t.Fatalf("release with a subscriber published %d times, want 1", n)
	}
	waitEvent(t, events, locking.EventReleased)
}

// Fences of plain lock users (last + 1) and of electors (max(last + 1,
// TIME)) interleave strictly increasing, and keep increasing after the
// server lost every key.
func TestProvider_G1_PlainAndElectorFencesInterleave(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	l, err := redislock.NewLock(c, locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	var last uint64
	take := func(elector bool) {
		t.Helper()
		var ls locking.Lease
		var err error
		if elector {
			ls, err = l.TryAcquireAs(ctx, "job", time.Minute, "e")
		} else {
			ls, err = l.TryAcquire(ctx, "job", time.Minute)
		}
		if err != nil {
			t.Fatal(err)
		}
		f := ls.(locking.Fenced).Fence()
		if f <= last {
			t.Fatalf("fence %d after %d (elector %v)", f, last, elector)
		}
		last = f
		if err := ls.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		take(i%3 == 0)
	}
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	take(false)
	take(false)
	take(true)
}

// TestProvider_G1_PlainFenceAfterAStaleFailover: a server whose stored
// fence is older than fences already issued (a replica promoted after it
// missed the last acquisitions) still issues a larger fence than all of
// them, for plain lock users and electors alike.
func TestProvider_G1_PlainFenceAfterAStaleFailover(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	l, err := redislock.NewLock(c, locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	key, err := l.ProviderKey("job")
	if err != nil {
		t.Fatal(err)
	}
	meta := redislock.MetaKey(key)
	take := func(elector bool) uint64 {
		t.Helper()
		var ls locking.Lease
		var err error
		if elector {
			ls, err = l.TryAcquireAs(ctx, "job", time.Minute, "e")
		} else {
			ls, err = l.TryAcquire(ctx, "job", time.Minute)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = ls.Release(ctx) }()
		return ls.(locking.Fenced).Fence()
	}
	for _, elector := range []bool{false, true} {
		first := take(false)
		stale := c.HGet(ctx, meta, "fence").Val()
		if stale != strconv.FormatUint(first, 10) {
			t.Fatalf("stored fence %q, want %d", stale, first)
		}
		var last uint64
		for range 5 {
			last = take(false)
		}
		// The promoted replica saw the first acquisition only.
		if err := c.HSet(ctx, meta, "fence", stale).Err(); err != nil {
			t.Fatal(err)
		}
		if f := take(elector); f <= last {
			t.Fatalf("after the stale failover (elector %v): fence %d, but %d was issued before", elector, f, last)
		}
	}
}

// A stored fence that is not a decimal integer below 2^53 fails a plain
// acquisition with ErrBadRecord and leaves nothing written.
func TestProvider_G1_PlainBadFenceWritesNothing(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	p := redislock.New(c)
	defer p.Close()
	ctx := context.Background()
	meta := redislock.MetaKey("k")
	for _, bad := range []string{"x", "-3", "9007199254740991", "1e5"} {
		if err := c.HSet(ctx, meta, "fence", bad).Err(); err != nil {
			t.Fatal(err)
		}
		_, _, err := acquireRaw(p, ctx, "k", "v", time.Minute)
		if !errors.Is(err, locking.ErrBadRecord) {
			t.Fatalf("fence %q: Acquire = %v, want ErrBadRecord", bad, err)
		}
		if n := c.Exists(ctx, "k").Val(); n != 0 {
			t.Fatalf("fence %q: the lease was left behind", bad)
		}
		if got := c.HGet(ctx, meta, "fence").Val(); got != bad {
			t.Fatalf("fence %q: stored fence is now %q", bad, got)
		}
	}
}

// Extensions that fall due while one is on the wire share one pipelined
// round trip; every caller gets its own answer.
func TestProvider_L3_ConcurrentExtendsCoalesce(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	p := redislock.New(c)
	defer p.Close()
	ctx := context.Background()
	const n = 200
	for i := range n {
		if ok, _, err := acquireRaw(p, ctx, "k"+strconv.Itoa(i), "v", time.Minute); !ok || err != nil {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
	}
	before := c.PoolStats().Hits + c.PoolStats().Misses
	results := make(chan error, n)
	start := make(chan struct{})
	for i := range n {
		go func() {
			<-start
			value := "v"
			if i%2 == 1 {
				value = "other" // not the holder: refused
			}
			ok, err := extendRaw(p, ctx, "k"+strconv.Itoa(i), value, time.Minute)
			switch {
			case err != nil:
				results <- err
			case ok != (i%2 == 0):
				results <- fmt.Errorf("Extend(k%d, %s) = %v", i, value, ok)
			default:
				results <- nil
			}
		}()
	}
	close(start)
	for range n {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	// Connections taken from the pool: one per round trip.
	trips := c.PoolStats().Hits + c.PoolStats().Misses - before
	if trips >= n {
		t.Fatalf("%d concurrent extensions took %d round trips, want fewer", n, trips)
	}
	t.Logf("%d concurrent extensions in %d round trips", n, trips)
}
