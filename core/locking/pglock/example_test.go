package pglock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/fencing"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

// An elector over PostgreSQL. The example needs a server, so it is
// compiled but not run.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@localhost:5432/app")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	p, err := pglock.New(pool, pglock.Options{Table: "app_locks"})
	if err != nil {
		fmt.Println(err)
		return
	}
	lo := locking.DefaultOptions()
	lo.Namespace = "billing"
	lock, err := locking.New(p.ForLock(), lo) // the lock owns p now: lock.Close closes it
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()
	e, err := leadership.NewElector("invoices", lock, leadership.DefaultOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := e.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = e.Stop(ctx) }()
}

// The tables' SQL, for a migration tool (Options.ExternalSchema).
func ExampleSchema() {
	sql, err := pglock.Schema("ops", "app_locks")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sql[:strings.Index(sql, "\n")])
	_, err = pglock.Schema("", "app-locks")
	fmt.Println(errors.Is(err, pglock.ErrInvalidOptions))
	// Output:
	// SELECT pg_advisory_xact_lock(hashtext('hostloom:' || 'ops.app_locks'));
	// true
}

// A leader's write that must never commit after its term ended: the term
// check runs first in the same transaction. providerKey is the elector's
// leadership.Describe(e).ProviderKey.
func ExampleProvider_CheckLeader() {
	var (
		p           *pglock.Provider // the elector's provider
		pool        *pgxpool.Pool
		providerKey string
	)
	work := func(ctx context.Context) error { // ctx: the term's, e.g. a scheduler run's
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := p.CheckLeader(ctx, tx, providerKey); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "UPDATE invoices SET sent = true WHERE id = $1", 42)
			return err
		})
		if errors.Is(err, fencing.ErrStale) {
			return nil // the term has ended; nothing was written
		}
		return err
	}
	_ = work
}
