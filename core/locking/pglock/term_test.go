package pglock_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/fencing"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

func wantTermEnded(t *testing.T, err error, want pglock.TermError) {
	t.Helper()
	var te *pglock.TermError
	if !errors.Is(err, fencing.ErrStale) || !errors.Is(err, pglock.ErrTermEnded) || !errors.As(err, &te) {
		t.Fatalf("err = %v, want a *pglock.TermError matching fencing.ErrStale", err)
	}
	if *te != want {
		t.Fatalf("TermError = %+v, want %+v", *te, want)
	}
}

// checkIn runs CheckTerm in a new transaction on pool and commits it.
func checkIn(ctx context.Context, pool *pgxpool.Pool, p *pglock.Provider, key string, f uint64) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return p.CheckTerm(ctx, tx, key, f) })
}

// checkedTx has a lock on pool take "job" for lease and opens a
// transaction on pool that checked the term (rolled back when t ends unless
// committed). successor is another lock on pool.
func checkedTx(t *testing.T, pool *pgxpool.Pool, lease time.Duration) (tx pgx.Tx, successor *locking.DistributedLock) {
	t.Helper()
	ctx := context.Background()
	a, pa := newLock(t, pool, pglock.Options{}, "")
	successor, _ = newLock(t, pool, pglock.Options{}, "")
	pk, _ := a.ProviderKey("job")
	ls, err := a.TryAcquire(ctx, "job", lease)
	if err != nil {
		t.Fatal(err)
	}
	tx, err = pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if err := pa.CheckTerm(ctx, tx, pk, fence(t, ls)); err != nil {
		t.Fatalf("CheckTerm: %v", err)
	}
	return tx, successor
}

func TestCheckTerm_D3_RefusesEndedTerms(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	a, pa := newLock(t, pool, pglock.Options{}, "")
	b, _ := newLock(t, pool, pglock.Options{}, "")
	pk, _ := a.ProviderKey("job")
	ls, err := a.TryAcquire(ctx, "job", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	f1 := fence(t, ls)
	if err := checkIn(ctx, pool, pa, pk, f1); err != nil {
		t.Fatalf("CheckTerm of the live term: %v", err)
	}
	// The package function, on the table by name, agrees.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return pglock.CheckTerm(ctx, tx, pa.Table(), pk, f1) })
	if err != nil {
		t.Fatalf("pglock.CheckTerm: %v", err)
	}
	wantTermEnded(t, checkIn(ctx, pool, pa, pk, f1-1), pglock.TermError{Key: pk, Fence: f1 - 1, Current: f1})
	wantTermEnded(t, checkIn(ctx, pool, pa, "lock:nobody", f1), pglock.TermError{Key: "lock:nobody", Fence: f1})
	// Run out by the server's clock, nobody else yet.
	time.Sleep(300 * time.Millisecond)
	wantTermEnded(t, checkIn(ctx, pool, pa, pk, f1), pglock.TermError{Key: pk, Fence: f1, Current: f1, Expired: true})
	// A successor's term.
	ls2, err := b.TryAcquire(ctx, "job", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	f2 := fence(t, ls2)
	wantTermEnded(t, checkIn(ctx, pool, pa, pk, f1), pglock.TermError{Key: pk, Fence: f1, Current: f2})
	if err := checkIn(ctx, pool, pa, pk, f2); err != nil {
		t.Fatalf("CheckTerm of the successor: %v", err)
	}
	// Released: ended too.
	if err := ls2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wantTermEnded(t, checkIn(ctx, pool, pa, pk, f2), pglock.TermError{Key: pk, Fence: f2, Current: f2, Expired: true})
	// Bad input.
	if err := checkIn(ctx, pool, pa, "job", 0); !errors.Is(err, fencing.ErrZeroFence) {
		t.Fatalf("CheckTerm(fence 0) = %v, want fencing.ErrZeroFence", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return pglock.CheckTerm(ctx, tx, `locks"; --`, pk, f2) })
	if !errors.Is(err, pglock.ErrInvalidOptions) {
		t.Fatalf("CheckTerm on a bad table name = %v, want ErrInvalidOptions", err)
	}
	for _, table := range []string{"", "public.", "a.b.c"} {
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return pglock.CheckTerm(ctx, tx, table, pk, f2) })
		if !errors.Is(err, pglock.ErrInvalidOptions) {
			t.Fatalf("CheckTerm on table %q = %v, want ErrInvalidOptions", table, err)
		}
	}
	if err := pa.CheckLeader(ctx, nil, pk); !errors.Is(err, pglock.ErrNoFence) {
		t.Fatalf("CheckLeader without a term's context = %v, want ErrNoFence", err)
	}
}

// D3: the check holds until commit. While a transaction that checked the
// term is open, the successor's acquisition waits for it, even after the
// lease ran out; once it commits the successor takes the key. The
// transaction's idle timeout is lowered to the lease's remaining time.
func TestCheckTerm_D3_SuccessorWaitsForTheCheckedTransaction(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	const lease = 300 * time.Millisecond
	tx, b := checkedTx(t, pool, lease)
	var timeout string
	if err := tx.QueryRow(ctx, "SHOW idle_in_transaction_session_timeout").Scan(&timeout); err != nil {
		t.Fatal(err)
	}
	if ms, err := strconv.Atoi(timeout[:len(timeout)-2]); err != nil || timeout[len(timeout)-2:] != "ms" || ms <= 0 || ms > int(lease/time.Millisecond) {
		t.Fatalf("idle_in_transaction_session_timeout = %q, want at most the lease's %v", timeout, lease)
	}
	// The transaction keeps working (it is not idle) while the lease runs
	// out; the successor tries meanwhile.
	if _, err := tx.Exec(ctx, "SELECT pg_sleep($1)", (lease + 100*time.Millisecond).Seconds()); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, waitFor)
		defer cancel()
		_, err := b.TryAcquire(actx, "job", time.Minute)
		got <- err
	}()
	if _, err := tx.Exec(ctx, "SELECT pg_sleep(0.3)"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		t.Fatalf("the successor's acquisition returned (%v) while the checked transaction is open", err)
	default:
	}
	if _, err := tx.Exec(ctx, "CREATE TABLE effect (x int)"); err != nil {
		t.Fatal(err) // the effect, committed under the checked term
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the successor's acquisition after the commit: %v", err)
	}
	var timeoutAfter string
	if err := pool.QueryRow(ctx, "SHOW idle_in_transaction_session_timeout").Scan(&timeoutAfter); err != nil || timeoutAfter != "0" {
		t.Fatalf("idle_in_transaction_session_timeout after the transaction = %q, %v; want the default 0", timeoutAfter, err)
	}
}

// D3: a holder idle inside a checked transaction past its lease (a paused
// process) is disconnected by the server, which ends the transaction and
// its lock: the successor takes the key, the late commit fails.
func TestCheckTerm_D3_IdleHolderDisconnectedAtItsLeaseEnd(t *testing.T) {
	pool := newDB(t)
	ctx := context.Background()
	const lease = 300 * time.Millisecond
	tx, b := checkedTx(t, pool, lease)
	actx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	if _, err := b.TryAcquire(actx, "job", time.Minute); err != nil {
		// Refused while the lease still runs; it waited for the lock.
		if !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("successor: %v", err)
		}
		time.Sleep(lease)
		if _, err := b.TryAcquire(actx, "job", time.Minute); err != nil {
			t.Fatalf("successor after the idle holder's lease: %v", err)
		}
	}
	if _, err := tx.Exec(ctx, "CREATE TABLE late_effect (x int)"); err == nil {
		if err := tx.Commit(ctx); err == nil {
			t.Fatal("the idle holder's late transaction committed after its successor took the key")
		}
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'late_effect'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("late_effect tables: %d, %v", n, err)
	}
}
