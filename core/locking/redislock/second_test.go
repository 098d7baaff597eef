package redislock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// startLock starts a private redis-server and returns it, a client for it
// and a DistributedLock with options o over a provider on that client. The
// provider is closed when the test ends, before the client and the server
// (Close is idempotent, so a test may also close it itself).
func startLock(t *testing.T, o locking.Options) (*redistest.Server, *redis.Client, *locking.DistributedLock, *redislock.Provider) {
	t.Helper()
	s := redistest.Start(t)
	c := s.Client(t)
	p := redislock.New(c)
	l, err := locking.New(p, o)
	if err != nil {
		t.Fatalf("locking.New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return s, c, l, p
}

// fence acquires key through l, releases it and returns its fence.
func fence(t *testing.T, l *locking.DistributedLock, key string) uint64 {
	t.Helper()
	ctx := context.Background()
	ls, err := l.TryAcquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatalf("TryAcquire(%q): %v", key, err)
	}
	f, ok := ls.(locking.Fenced)
	if !ok || f.Fence() == 0 {
		t.Fatalf("lease %T has no fence", ls)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("Release(%q): %v", key, err)
	}
	return f.Fence()
}

func TestProvider_G1_FencesIncreaseAcrossFlushAndRestart(t *testing.T) {
	s, c, l, _ := startLock(t, locking.DefaultOptions())
	ctx := context.Background()
	last := fence(t, l, "job")
	for range 3 {
		f := fence(t, l, "job")
		if f <= last {
			t.Fatalf("fence %d after %d, want larger", f, last)
		}
		last = f
	}
	// The fence state is lost with the data: the server's clock keeps the
	// next fence larger.
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if f := fence(t, l, "job"); f <= last {
		t.Fatalf("fence %d after FLUSHALL, want more than %d", f, last)
	} else {
		last = f
	}
	s.Restart(t) // an empty server: nothing persisted
	deadline := time.Now().Add(10 * time.Second)
	var ls locking.Lease
	var err error
	for {
		ls, err = l.TryAcquire(ctx, "job", time.Minute)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("TryAcquire after restart: %v", err)
	}
	if f := ls.(locking.Fenced).Fence(); f <= last {
		t.Fatalf("fence %d after a restart without persistence, want more than %d", f, last)
	}
}

func TestProvider_G1_FenceStoredInMetaHash(t *testing.T) {
	o := locking.DefaultOptions()
	o.Namespace = "billing"
	_, c, l, _ := startLock(t, o)
	ctx := context.Background()
	f := fence(t, l, "job")
	meta := redislock.MetaKey("billing:lock:job")
	got, err := c.HGet(ctx, meta, "fence").Uint64()
	if err != nil || got != f {
		t.Fatalf("HGET %q fence = %d, %v; want %d", meta, got, err, f)
	}
	// Long-lived: the fence outlives the lease.
	ttl, err := c.PTTL(ctx, meta).Result()
	if err != nil || ttl <= redislock.MetaTTL-time.Minute || ttl > redislock.MetaTTL {
		t.Fatalf("PTTL %q = %v, %v; want about %v", meta, ttl, err, redislock.MetaTTL)
	}
	// A fence is about the server's time in microseconds.
	now := time.Now().UnixMicro()
	if d := int64(f) - now; d > int64(time.Minute/time.Microsecond) || d < -int64(time.Minute/time.Microsecond) {
		t.Fatalf("fence %d is not near the time in microseconds %d", f, now)
	}
}

func TestProvider_G1_BadStoredFenceIsAnErrorNamingTheKey(t *testing.T) {
	_, c, l, _ := startLock(t, locking.DefaultOptions())
	ctx := context.Background()
	meta := redislock.MetaKey("lock:job")
	for _, bad := range []string{"abc", "-5", "1.5", "", "99999999999999999999", "9007199254740993", " 12"} {
		if err := c.HSet(ctx, meta, "fence", bad).Err(); err != nil {
			t.Fatal(err)
		}
		_, err := l.TryAcquire(ctx, "job", time.Minute)
		if !errors.Is(err, locking.ErrBadRecord) {
			t.Fatalf("TryAcquire with stored fence %q = %v, want ErrBadRecord", bad, err)
		}
		var re *locking.RecordError
		if !errors.As(err, &re) || re.Key != meta || re.Value != bad {
			t.Fatalf("error %v does not carry the meta key %q and value %q", err, meta, bad)
		}
		if !strings.Contains(err.Error(), `"job"`) {
			t.Fatalf("error %q does not name the key", err)
		}
		// Nothing was taken.
		if n, _ := c.Exists(ctx, "lock:job").Result(); n != 0 {
			t.Fatalf("the lock key was written despite the bad fence %q", bad)
		}
	}
	// Repaired by hand (HDEL), acquisitions work again.
	if err := c.HDel(ctx, meta, "fence").Err(); err != nil {
		t.Fatal(err)
	}
	fence(t, l, "job")
}

func TestProvider_P1_BadParticipantRecordSkippedAndReported(t *testing.T) {
	_, c, l, _ := startLock(t, locking.DefaultOptions())
	ctx := context.Background()
	if _, err := l.TryAcquireAs(ctx, "job", time.Minute, "alice"); err != nil {
		t.Fatal(err)
	}
	meta := redislock.MetaKey("lock:job")
	for field, v := range map[string]string{"p:old": "garbage", "p:neg": "-1:5", "p:swapped": "20:10", "p:empty": ""} {
		if err := c.HSet(ctx, meta, field, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := l.Participants(ctx, "job")
	if !errors.Is(err, locking.ErrBadRecord) || !strings.Contains(err.Error(), `"job"`) || !strings.Contains(err.Error(), "p:old") {
		t.Fatalf("Participants = %v; want ErrBadRecord naming the key and the record", err)
	}
	if len(ps) != 1 || ps[0].Owner != "alice" {
		t.Fatalf("Participants = %v, want alice alone (bad records skipped)", ps)
	}
	st, err := l.Inspect(ctx, "job")
	if !errors.Is(err, locking.ErrBadRecord) || !st.Held || len(st.Participants) != 1 {
		t.Fatalf("Inspect = %+v, %v; want the state with ErrBadRecord", st, err)
	}
	// Registrations still work over the bad records.
	if _, err := l.TryAcquireAs(ctx, "job", time.Minute, "bob"); !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("TryAcquireAs(bob) = %v", err)
	}
	// A bad stored fence in Inspect is reported, not a panic.
	if err := c.HSet(ctx, meta, "fence", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Inspect(ctx, "job"); !errors.Is(err, locking.ErrBadRecord) {
		t.Fatalf("Inspect with a bad fence = %v, want ErrBadRecord", err)
	}
	// A meta key holding another type is an error, not a panic.
	if err := c.Del(ctx, meta).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, meta, "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Participants(ctx, "job"); err == nil || !strings.Contains(err.Error(), `"job"`) {
		t.Fatalf("Participants over a non-hash meta key = %v; want an error naming the key", err)
	}
	if _, err := l.TryAcquireAs(ctx, "job", time.Minute, "bob"); err == nil || errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("TryAcquireAs over a non-hash meta key = %v; want an error", err)
	}
}

// TestProvider_P2_EventsSurvivePubSubKill kills the pub/sub connection
// (CLIENT KILL TYPE pubsub): an event watcher sees EventUnsubscribed, then
// EventSubscribed once go-redis has reconnected, and events flow again.
func TestProvider_P2_EventsSurvivePubSubKill(t *testing.T) {
	_, c, l, p := startLock(t, locking.DefaultOptions())
	ctx := context.Background()
	events, stop := providerEvents(t, l, "job")
	defer stop()
	want := func(k locking.EventKind, owner string) {
		t.Helper()
		select {
		case e := <-events:
			if e.Kind != k || e.Owner != owner {
				t.Fatalf("event %v %q, want %v %q", e.Kind, e.Owner, k, owner)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %v event", k)
		}
	}
	want(locking.EventSubscribed, "")
	for range 2 {
		if err := c.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
			t.Fatalf("CLIENT KILL TYPE pubsub: %v", err)
		}
		want(locking.EventUnsubscribed, "")
		want(locking.EventSubscribed, "")
		ls, err := l.TryAcquireAs(ctx, "job", time.Minute, "alice")
		if err != nil {
			t.Fatal(err)
		}
		want(locking.EventAcquired, "alice")
		if err := ls.Release(ctx); err != nil {
			t.Fatal(err)
		}
		want(locking.EventReleased, "")
	}
	// Close reports the subscription gone.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	want(locking.EventUnsubscribed, "")
}

func TestProvider_P2_MessagesOfOtherVersions(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	p := redislock.New(c)
	defer p.Close()
	events, stop := providerEvents(t, p, "k")
	defer stop()
	next := func() locking.Event {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
			return locking.Event{}
		}
	}
	if e := next(); e.Kind != locking.EventSubscribed {
		t.Fatalf("first event %v, want subscribed", e.Kind)
	}
	// An older release (empty payload) counts; unknown payloads are
	// ignored.
	for _, payload := range []string{"future:thing", ""} {
		if err := c.Publish(ctx, "k:released", payload).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if e := next(); e.Kind != locking.EventReleased {
		t.Fatalf("event %v, want released (unknown payload ignored)", e.Kind)
	}
	select {
	case e := <-events:
		t.Fatalf("unexpected event %v after the release", e.Kind)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestProvider_L3_EndedContextErrorsWrapIt(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	p := redislock.New(c)
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "redislock: ") {
			t.Errorf("%s with an ended context = %v, want a redislock error wrapping DeadlineExceeded", op, err)
		}
	}
	_, _, err := acquireRaw(p, ctx, "k", "v", time.Second)
	check("Acquire", err)
	_, err = extendRaw(p, ctx, "k", "v", time.Second)
	check("Extend", err)
	_, err = releaseRaw(p, ctx, "k", "v")
	check("Release", err)
	_, _, _, err = p.Get(ctx, "k")
	check("Get", err)
	_, _, err = p.Advance(ctx, "k", 1)
	check("Advance", err)
	_, _, err = p.State(ctx, "k")
	check("State", err)
	_, err = p.Inspect(ctx, "k")
	check("Inspect", err)
	_, err = p.Participants(ctx, "k")
	check("Participants", err)
	check("Deregister", p.Deregister(ctx, "k", "o"))
	check("RequestResign", p.RequestResign(ctx, "k", ""))
	_, err = p.Keys(ctx, "")
	check("Keys", err)
}

func TestProvider_P1_ExpiredParticipantsPrunedOnAcquisition(t *testing.T) {
	_, c, l, _ := startLock(t, locking.DefaultOptions())
	ctx := context.Background()
	meta := redislock.MetaKey("lock:job")
	// A participant that crashed long ago, and a live one.
	now := time.Now().UnixMilli()
	if err := c.HSet(ctx, meta, "p:crashed", "1:2", "p:live", "1:"+strconv.FormatInt(now+60_000, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	ls, err := l.TryAcquireAs(ctx, "job", time.Minute, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.HExists(ctx, meta, "p:crashed").Result(); ok {
		t.Fatal("an expired participant record survived an acquisition")
	}
	ps, err := l.Participants(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Owner)
	}
	// live registered first (Since 1 ms after the epoch), then alice.
	if len(got) != 2 || got[0] != "live" || got[1] != "alice" {
		t.Fatalf("participants = %v, want [live alice] oldest first", got)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
