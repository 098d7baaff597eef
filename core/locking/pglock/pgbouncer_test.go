package pglock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/lockingtest"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/testing/pgtest"
)

// bouncedPool returns a pool on a fresh database through a private
// PgBouncer in transaction mode with one server connection, so every
// transaction may land on a session another client used last: whatever
// outlived a statement would show. The pool keeps pgx's default query
// mode (named prepared statements, cached per connection), which itself
// does not survive transaction mode; pglock's statements do not use it.
// direct is a pool on the same database without the bouncer.
func bouncedPool(t *testing.T) (bounced, direct *pgxpool.Pool) {
	t.Helper()
	dsn := pg.NewDatabase(t)
	b, err := pgtest.StartBouncer(pg.Server(t), "transaction", 1)
	if errors.Is(err, pgtest.ErrNoBouncer) && !pgtest.Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	name := dsn[strings.Index(dsn, "dbname=")+len("dbname=") : strings.Index(dsn, " sslmode")]
	bounced, err = pgxpool.New(context.Background(), b.ConnString(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bounced.Close)
	direct, err = pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(direct.Close)
	return bounced, direct
}

// bouncedBackend runs the locks through PgBouncer and inspects the tables
// directly.
type bouncedBackend struct {
	bounced *pgxpool.Pool
	direct  backend
}

func (b bouncedBackend) NewLock(t *testing.T, o locking.Options) *locking.DistributedLock {
	t.Helper()
	return backend{pool: b.bounced, o: b.direct.o}.NewLock(t, o)
}
func (b bouncedBackend) Exists(t *testing.T, key string) bool { return b.direct.Exists(t, key) }
func (b bouncedBackend) Size(t *testing.T) int                { return b.direct.Size(t) }

// D1, D2: through PgBouncer in transaction mode, with notifications
// disabled, the conformance suite holds (the event checks are skipped: the
// lock reports no events), the term check included.
func TestPgBouncer_D1_TransactionModeConformance(t *testing.T) {
	bounced, direct := bouncedPool(t)
	ctx := context.Background()
	// The harness is hostile to session state: two clients share the one
	// server session, so pgx's default mode (a named prepared statement
	// per SQL text, cached per client connection) collides.
	c1, err := bounced.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Release()
	c2, err := bounced.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Release()
	_, err1 := c1.Exec(ctx, "SELECT $1::int", 1)
	_, err2 := c2.Exec(ctx, "SELECT $1::int", 1)
	if err1 == nil && err2 == nil {
		t.Fatal("two clients' named prepared statements coexist: the bouncer does not share server sessions, so this test would prove nothing")
	}
	t.Logf("pgx's default statement cache through transaction mode: %v", errors.Join(err1, err2))
	c1.Release()
	c2.Release()

	lockingtest.Run(t, lockingtest.Config{
		Short: 100 * time.Millisecond,
		New: func(t *testing.T) lockingtest.Backend {
			o := pglock.Options{Table: fmt.Sprintf("locks_%d", seq.Add(1)), DisableNotifications: true}
			return bouncedBackend{bounced: bounced, direct: backend{pool: direct, o: o}}
		},
	})

	// The term check, in a transaction through the bouncer.
	l, p := newLock(t, bounced, pglock.Options{Table: "termcheck", DisableNotifications: true}, "")
	ls, err := l.TryAcquire(ctx, "job", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pk, _ := l.ProviderKey("job")
	for range 3 {
		err := pgx.BeginFunc(ctx, bounced, func(tx pgx.Tx) error { return p.CheckTerm(ctx, tx, pk, fence(t, ls)) })
		if err != nil {
			t.Fatalf("CheckTerm through PgBouncer: %v", err)
		}
	}
}
