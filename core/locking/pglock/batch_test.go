package pglock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

// burst runs fn(i) for i in [0, n) on n goroutines released at once.
func burst(n int, fn func(i int)) {
	var start, wg sync.WaitGroup
	start.Add(1)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start.Wait()
			fn(i)
		}()
	}
	start.Done()
	wg.Wait()
}

// TestProvider_L1_CoalescedCallsKeepTheirOwnOutcomes: acquisitions and
// extensions that fall due together share round trips on at most two
// connections of a pool that allows 32, and each keeps the outcome it
// would have alone (taken, refused with the holder, extended, refused),
// a statement the server refuses (a key that is not valid UTF-8) failing
// alone.
func TestProvider_L1_CoalescedCallsKeepTheirOwnOutcomes(t *testing.T) {
	cfg, err := pgxpool.ParseConfig(newDB(t).Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 32
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	p := newProvider(t, pool, pglock.Options{})
	ctx := context.Background()
	if _, err := p.Inspect(ctx, "warm"); err != nil { // creates the tables
		t.Fatal(err)
	}
	const n = 64
	key := func(i int) string { return fmt.Sprintf("k%02d", i) }
	fences := make([]uint64, n)
	errs := make([]error, n)
	burst(n, func(i int) {
		k := key(i)
		if i%16 == 5 {
			k = "bad\xff" // refused by the server's encoding check
		}
		res, err := p.Acquire(ctx, locking.AcquireRequest{Key: k, Value: "a" + key(i), TTL: time.Minute, Owner: "o"})
		switch {
		case i%16 == 5:
			if err == nil {
				errs[i] = fmt.Errorf("acquire of an invalid key succeeded: %+v", res)
			}
		case err != nil:
			errs[i] = err
		case !res.Acquired || res.Fence == 0:
			errs[i] = fmt.Errorf("acquire %s = %+v, want acquired with a fence", k, res)
		default:
			fences[i] = res.Fence
		}
	})
	burst(n, func(i int) {
		if i%16 == 5 || errs[i] != nil {
			return
		}
		res, err := p.Acquire(ctx, locking.AcquireRequest{Key: key(i), Value: "b", TTL: time.Minute, Owner: "o2"})
		if err != nil || res.Acquired || res.HolderValue != "a"+key(i) || res.Remaining <= 0 || res.Remaining > time.Minute {
			errs[i] = fmt.Errorf("second acquire of %s = %+v, %v; want refused, held by %q", key(i), res, err, "a"+key(i))
		}
	})
	burst(n, func(i int) {
		if i%16 == 5 || errs[i] != nil {
			return
		}
		value := "a" + key(i)
		if i%2 == 1 {
			value = "wrong"
		}
		res, err := p.Extend(ctx, locking.ExtendRequest{Key: key(i), Value: value, TTL: time.Minute, Owner: "o"})
		if err != nil || res.Extended != (i%2 == 0) {
			errs[i] = fmt.Errorf("extend %s with %q = %+v, %v; want extended %v", key(i), value, res, err, i%2 == 0)
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	seen := map[uint64]bool{}
	for i, f := range fences {
		if i%16 != 5 && seen[f] {
			t.Errorf("fence %d issued twice", f)
		}
		seen[f] = true
	}
	if got := pool.Stat().TotalConns(); got > 2 {
		t.Errorf("the provider opened %d connections for %d calls at a time, want at most 2 (one call alone, the rest coalesced)", got, n)
	}
}

// TestProvider_L3_QueuedCallWhoseContextEndsIsNotSent: a call queued
// behind one on the wire returns when its context ends and is never sent;
// its error is an outage's, since the server answered nothing meanwhile
// (E7).
func TestProvider_L3_QueuedCallWhoseContextEndsIsNotSent(t *testing.T) {
	pool := newDB(t)
	p := newProvider(t, pool, pglock.Options{})
	ctx := context.Background()
	if _, err := p.Inspect(ctx, "warm"); err != nil {
		t.Fatal(err)
	}
	// Hold the row of key "busy" so an acquisition of it stays on the wire.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := p.Acquire(ctx, locking.AcquireRequest{Key: "busy", Value: "v", TTL: time.Millisecond, Owner: "o"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM hostloom_locks WHERE key = 'busy' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() {
		_, err := p.Acquire(ctx, locking.AcquireRequest{Key: "busy", Value: "w", TTL: time.Minute, Owner: "o"})
		blocked <- err
	}()
	time.Sleep(100 * time.Millisecond) // the acquisition of "busy" is on the wire
	qctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = p.Acquire(qctx, locking.AcquireRequest{Key: "queued", Value: "q", TTL: time.Minute, Owner: "o"})
	if err == nil || qctx.Err() == nil {
		t.Fatalf("queued acquire = %v, want its context's error", err)
	}
	if errors.Is(err, locking.ErrNotSent) {
		// The server answered nothing while the call waited: a server
		// that does not answer, not a process that is overloaded.
		t.Fatalf("queued acquire behind an unanswered round trip = %v, want an error that does not match locking.ErrNotSent", err)
	}
	_ = tx.Rollback(ctx)
	if err := <-blocked; err != nil {
		t.Fatalf("the acquisition on the wire: %v", err)
	}
	st, err := p.Inspect(ctx, "queued")
	if err != nil {
		t.Fatal(err)
	}
	if st.Held || st.Fence != 0 {
		t.Fatalf("key queued = %+v: the call that left the queue was sent", st)
	}
}

// TestProvider_L1_E7_CallsNotSentWhileTheServerAnswersMatchErrNotSent: a
// call that waits in the queue while the server answers other round trips,
// and whose context ends before its turn, is not sent and its error
// matches locking.ErrNotSent (the process is saturated, and an elector
// backs off).
func TestProvider_L1_E7_CallsNotSentWhileTheServerAnswersMatchErrNotSent(t *testing.T) {
	pool := newDB(t)
	p := newProvider(t, pool, pglock.Options{})
	ctx := context.Background()
	for _, k := range []string{"busy1", "busy2"} {
		if _, err := p.Acquire(ctx, locking.AcquireRequest{Key: k, Value: "v", TTL: time.Millisecond, Owner: "o"}); err != nil {
			t.Fatal(err)
		}
	}
	// hold locks a key's row in a transaction of its own, so an
	// acquisition of that key stays on the wire until release.
	hold := func(key string) (release func()) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM hostloom_locks WHERE key = $1 FOR UPDATE`, key); err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		release = func() { once.Do(func() { _ = tx.Rollback(ctx) }) }
		t.Cleanup(release)
		return release
	}
	release1, release2 := hold("busy1"), hold("busy2")
	acquire := func(ctx context.Context, key string, done chan<- error) {
		_, err := p.Acquire(ctx, locking.AcquireRequest{Key: key, Value: "w", TTL: time.Minute, Owner: "o"})
		done <- err
	}
	first, second, queued := make(chan error, 1), make(chan error, 1), make(chan error, 1)
	// The first round trip: alone, on the wire until busy1 is released.
	go acquire(ctx, "busy1", first)
	time.Sleep(100 * time.Millisecond)
	// Queued behind it: an acquisition with time to spare (the next
	// round's, on the wire until busy2 is released) and one whose
	// deadline comes first.
	go acquire(ctx, "busy2", second)
	qctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	go acquire(qctx, "queued", queued)
	time.Sleep(900 * time.Millisecond)
	// The server answers the first round trip (about 1 s). The next one
	// carries the call with time to spare; the other, with less time
	// left than the last round trip took, waits for the round after it
	// and its context ends in the queue.
	release1()
	if err := <-first; err != nil {
		t.Fatalf("the first acquisition: %v", err)
	}
	err := <-queued
	release2()
	if err == nil || qctx.Err() == nil {
		t.Fatalf("queued acquire = %v, want its context's error", err)
	}
	if !errors.Is(err, locking.ErrNotSent) {
		t.Fatalf("queued acquire = %v, want an error matching locking.ErrNotSent: the server answered a round trip while it waited", err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the second acquisition: %v", err)
	}
	st, err := p.Inspect(ctx, "queued")
	if err != nil {
		t.Fatal(err)
	}
	if st.Held || st.Fence != 0 {
		t.Fatalf("key queued = %+v: the call that left the queue was sent", st)
	}
}
