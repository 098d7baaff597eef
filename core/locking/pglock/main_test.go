package pglock_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/testing/pgtest"
)

// pg is the private PostgreSQL server of the test run; seq numbers the
// tables of the conformance checks.
var (
	pg  pgtest.Shared
	seq atomic.Int64
)

func TestMain(m *testing.M) {
	if child() {
		return
	}
	code := pg.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// newDB creates a fresh database and returns a pool on it, closed (and the
// database dropped) when t ends. Without a server it skips t.
func newDB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pg.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// newProvider returns a provider over pool, closed when t ends.
func newProvider(t testing.TB, pool *pgxpool.Pool, o pglock.Options) *pglock.Provider {
	t.Helper()
	p, err := pglock.New(pool, o)
	if err != nil {
		t.Fatalf("pglock.New: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// newLock returns a lock over a new provider on pool, namespace ns.
func newLock(t testing.TB, pool *pgxpool.Pool, o pglock.Options, ns string) (*locking.DistributedLock, *pglock.Provider) {
	t.Helper()
	p := newProvider(t, pool, o)
	lo := locking.DefaultOptions()
	lo.Namespace = ns
	l, err := locking.New(p.ForLock(), lo)
	if err != nil {
		t.Fatal(err)
	}
	return l, p
}
