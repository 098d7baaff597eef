package pglock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/testing/pgtest"
)

// clientBackends returns the sorted process ids of the client backends
// connected to the pool's database, read through the pool.
func clientBackends(t *testing.T, pool *pgxpool.Pool) []int32 {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' ORDER BY pid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var pids []int32
	for rows.Next() {
		var pid int32
		if err := rows.Scan(&pid); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return pids
}

// TestProvider_D1_DeadlineOnTheWireKeepsTheSharedConnection: an
// acquisition whose caller's deadline passes while its statement runs
// returns that deadline and is released (L3), and the provider's shared
// connection stays open for the calls after it: no backend of the pool
// is closed. (A caller's deadline used to close that connection, so after
// a restart every round trip paid for a new connection and a cold
// backend, and roles stayed leaderless for seconds.)
func TestProvider_D1_DeadlineOnTheWireKeepsTheSharedConnection(t *testing.T) {
	pool := newDB(t)
	p := newProvider(t, pool, pglock.Options{})
	ctx := context.Background()
	if _, err := p.Acquire(ctx, locking.AcquireRequest{Key: "slow", Value: "v", TTL: time.Millisecond, Owner: "o"}); err != nil {
		t.Fatal(err)
	}
	// Two connections open and idle: one for the transaction below, one
	// for the provider's round trips.
	c1, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c1.Release()
	c2.Release()
	before := clientBackends(t, pool)
	if len(before) != 2 {
		t.Fatalf("backends before = %v, want the pool's two", before)
	}
	// Hold the row so the acquisition stays on the wire past its deadline.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM hostloom_locks WHERE key = 'slow' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := p.Acquire(short, locking.AcquireRequest{Key: "slow", Value: "late", TTL: time.Minute, Owner: "o"})
		done <- err
	}()
	<-short.Done()
	// The statement completes once the row is free, after its caller's
	// deadline.
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire past its deadline = %v, want its deadline", err)
	}
	res, err := p.Acquire(ctx, locking.AcquireRequest{Key: "next", Value: "v", TTL: time.Minute, Owner: "o"})
	if err != nil || !res.Acquired {
		t.Fatalf("the next acquisition = %+v, %v; want acquired", res, err)
	}
	if after := clientBackends(t, pool); !slices.Equal(after, before) {
		t.Fatalf("backends %v before the deadline, %v after: a caller's deadline closed a connection", before, after)
	}
	st, err := p.Inspect(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if st.Held {
		t.Fatalf("key slow = %+v: the acquisition whose reply came too late was not released", st)
	}
}

// TestProvider_E7_RestartWhileCallsAreQueued: the server is restarted
// (immediate shutdown: crash recovery on start) while twenty candidates
// keep acquiring on their retry interval, each call bounded by it, so
// calls are queued behind the provider's shared connection when it
// breaks. Once the server accepts connections again, an acquisition
// succeeds within a few retry intervals' attempts (the first may still
// meet the broken connection), and every candidate then succeeds too.
func TestProvider_E7_RestartWhileCallsAreQueued(t *testing.T) {
	srv, err := pgtest.Start()
	if err != nil {
		if pgtest.Required() {
			t.Fatalf("PostgreSQL is required here but did not start: %v", err)
		}
		t.Skipf("PostgreSQL did not start, skipping: %v", err)
	}
	t.Cleanup(srv.Stop)
	pool, err := pgxpool.New(context.Background(), srv.ConnString("postgres")+" connect_timeout=10")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	p := newProvider(t, pool, pglock.Options{})
	const retry = 250 * time.Millisecond
	acquire := func(key, value string) error {
		ctx, cancel := context.WithTimeout(context.Background(), retry)
		defer cancel()
		_, err := p.Acquire(ctx, locking.AcquireRequest{Key: key, Value: value, TTL: time.Second, Owner: value})
		return err
	}
	if err := acquire("warm", "w"); err != nil {
		// The first call creates the tables: give it the time it needs.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = p.Acquire(ctx, locking.AcquireRequest{Key: "warm", Value: "w", TTL: time.Second, Owner: "w"})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}

	const candidates = 20
	var (
		mu     sync.Mutex
		healed bool
		ok     [candidates]bool // succeeded since the server came back
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range candidates {
		wg.Go(func() {
			tick := time.NewTicker(retry)
			defer tick.Stop()
			for {
				err := acquire(fmt.Sprintf("role-%02d", i), fmt.Sprintf("c%02d", i))
				mu.Lock()
				if healed && err == nil {
					ok[i] = true
				}
				mu.Unlock()
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	time.Sleep(2 * retry) // the candidates' calls are flowing
	if err := srv.Shutdown(pgtest.ShutdownImmediate); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatalf("restart: %v (server log: %s)", err, srv.Log())
	}
	mu.Lock()
	healed = true
	mu.Unlock()

	// A probe on the candidates' cadence: one attempt per retry
	// interval, each bounded by it.
	const maxAttempts = 4
	var errs []error
	for attempt := 1; ; attempt++ {
		start := time.Now()
		err := acquire("probe", "p")
		if err == nil {
			t.Logf("acquired on attempt %d after the restart (errors before: %v)", attempt, errs)
			break
		}
		errs = append(errs, err)
		if attempt == maxAttempts {
			t.Fatalf("no acquisition in %d attempts after the server came back, each bounded by %v: %v", maxAttempts, retry, errs)
		}
		time.Sleep(time.Until(start.Add(retry)))
	}

	// Every candidate gets through as well (a generous bound: this checks
	// the outcome, not the time).
	deadline := time.Now().Add(20 * retry)
	for {
		mu.Lock()
		var missing []int
		for i, got := range ok {
			if !got {
				missing = append(missing, i)
			}
		}
		mu.Unlock()
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("candidates %v made no successful call within %v after the restart", missing, 20*retry)
		}
		time.Sleep(retry)
	}
}
