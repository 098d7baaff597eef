package fencingpg_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/fencing"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	fencingpg "github.com/hostloom/hostloom/examples/fencing-postgres"
)

// A leader writes its report with its term's fence; a write that arrives
// after a successor's is refused. Inside a leader's work the fence comes
// from fence, ok := leadership.FenceFrom(ctx). The example needs a
// PostgreSQL server, so it is compiled but not run.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@localhost:5432/app")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	if err := fencingpg.Migrate(ctx, pool); err != nil {
		fmt.Println(err)
		return
	}

	var fence uint64 = 42 // the term's fence
	err = fencingpg.SaveReport(ctx, pool, "daily", fence, "the report")
	switch {
	case errors.Is(err, fencing.ErrStale):
		fmt.Println("a successor has written; this term is over:", err)
	case err != nil:
		fmt.Println(err)
	}

	// Several writes that must land together, or not at all. The UPDATE
	// keeps its own fence condition, because SaveReport writes the same row
	// without passing through the gate table.
	err = fencingpg.WithFence(ctx, pool, "daily", fence, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO report_lines (report, line, fence) VALUES ('daily', 'total: 7', $1)", int64(fence)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, "UPDATE reports SET body = 'the report, with totals', fence = $1 WHERE id = 'daily' AND fence <= $1", int64(fence))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fencing.ErrStale // rolls the inserted line back too
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
}

// With the lease in the same database (core/locking/pglock), the
// transaction checks the term itself and its writes need no fence column.
// The example needs a PostgreSQL server, so it is compiled but not run.
func ExampleInTerm() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@localhost:5432/app")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	lo := locking.DefaultOptions()
	lo.Namespace = "billing"
	lock, err := pglock.NewLock(pool, pglock.Options{}, lo)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()
	provider, _ := pglock.ProviderOf(lock) // for the term check
	e, err := leadership.NewElector("reports", lock, leadership.DefaultOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := e.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = e.Stop(ctx) }()
	if err := e.WaitForLeadership(ctx); err != nil {
		fmt.Println(err)
		return
	}

	// Inside the leader's work, whose ctx derives from e.Token():
	work := func(ctx context.Context) error {
		fence, ok := leadership.FenceFrom(ctx)
		if !ok {
			return errors.New("not a term's context")
		}
		err := fencingpg.InTerm(ctx, pool, provider, leadership.Describe(e).ProviderKey, fence, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "UPDATE reports SET body = 'closed' WHERE id = 'daily'")
			return err
		})
		if errors.Is(err, fencing.ErrStale) {
			return nil // the term has ended; nothing was written
		}
		return err
	}
	_ = work(e.Token())
}
