package pglock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/lockingtest"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

// backend is one conformance check's store: tables of their own in the
// shared test database, so checks start empty without a new database.
type backend struct {
	pool *pgxpool.Pool
	o    pglock.Options
}

func (b backend) NewLock(t *testing.T, o locking.Options) *locking.DistributedLock {
	t.Helper()
	l, err := locking.New(b.NewProvider(t), o)
	if err != nil {
		t.Fatalf("locking.New: %v", err)
	}
	return l
}

// NewProvider implements lockingtest.ProviderBackend: a provider of its
// own on the check's tables (the view ForLock gives locking.New).
func (b backend) NewProvider(t *testing.T) locking.Provider {
	t.Helper()
	return newProvider(t, b.pool, b.o).ForLock()
}

// polled is a backend with notifications disabled, checked without the
// restricted variants (the L9 variants of TestConformance cover a provider
// without events already).
type polled struct{ b backend }

func (p polled) NewLock(t *testing.T, o locking.Options) *locking.DistributedLock {
	return p.b.NewLock(t, o)
}
func (p polled) Exists(t *testing.T, key string) bool { return p.b.Exists(t, key) }
func (p polled) Size(t *testing.T) int                { return p.b.Size(t) }

// Exists reports a live lease under key (a released key keeps its row
// for the fence, and is not stored in the sense of the suite).
func (b backend) Exists(t *testing.T, key string) bool {
	t.Helper()
	var n int
	q := fmt.Sprintf("SELECT count(*) FROM %s WHERE key = $1 AND value IS NOT NULL AND expires_at > clock_timestamp()", pgx.Identifier{b.o.Table}.Sanitize())
	if err := b.pool.QueryRow(context.Background(), q, key).Scan(&n); err != nil {
		t.Fatalf("exists %q: %v", key, err)
	}
	return n == 1
}

// Size counts live leases and state values (0 before the tables exist).
func (b backend) Size(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	var exists bool
	if err := b.pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", b.o.Table).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if !exists {
		return 0
	}
	var n int
	q := fmt.Sprintf(`SELECT (SELECT count(*) FROM %s WHERE value IS NOT NULL AND expires_at > clock_timestamp()) + (SELECT count(*) FROM %s)`,
		pgx.Identifier{b.o.Table}.Sanitize(), pgx.Identifier{b.o.Table + "_state"}.Sanitize())
	if err := b.pool.QueryRow(ctx, q).Scan(&n); err != nil {
		t.Fatalf("size: %v", err)
	}
	return n
}

// TestConformance runs the provider conformance suite (L1–L9, G1, P1, P2,
// O1) over a real PostgreSQL server, each check on tables of its own: the
// full provider, then restricted to the required methods and to each
// optional capability alone (L9).
func TestConformance(t *testing.T) {
	pool := newDB(t)
	lockingtest.Run(t, lockingtest.Config{
		Short: 100 * time.Millisecond,
		New: func(t *testing.T) lockingtest.Backend {
			return backend{pool: pool, o: pglock.Options{Table: fmt.Sprintf("locks_%d", seq.Add(1))}}
		},
	})
}

// TestConformance_D2_NotificationsDisabled runs the suite over providers
// with DisableNotifications (PgBouncer transaction mode): the event checks
// are skipped because the lock reports no events, everything else holds.
func TestConformance_D2_NotificationsDisabled(t *testing.T) {
	pool := newDB(t)
	lockingtest.Run(t, lockingtest.Config{
		Short: 100 * time.Millisecond,
		New: func(t *testing.T) lockingtest.Backend {
			return polled{backend{pool: pool, o: pglock.Options{Table: fmt.Sprintf("locks_%d", seq.Add(1)), DisableNotifications: true}}}
		},
	})
}
