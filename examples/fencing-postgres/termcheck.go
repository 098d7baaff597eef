package fencingpg

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hostloom/hostloom/core/locking/pglock"
)

// InTerm runs fn in a transaction that first checks, with
// pglock.Provider.CheckTerm, that the lease of providerKey on p's table
// still carries fence and has not run out by the database's clock. The
// check keeps the lease row share-locked until the transaction ends, so
// the key's next holder cannot take it before this transaction commits or
// rolls back: everything fn writes commits inside this term, in any table
// of the database that holds the lease, with no fence column.
//
// When the term has ended fn is not called and the error matches
// fencing.ErrStale (a *pglock.TermError). When fn returns an error the
// transaction is rolled back and the error returned. db must reach the
// database of p's table (the same pool, or another pool on it).
func InTerm(ctx context.Context, db TxDB, p *pglock.Provider, providerKey string, fence uint64, fn func(pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("fencingpg: begin %q: %w", providerKey, err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // after Commit: does nothing
	if err := p.CheckTerm(ctx, tx, providerKey, fence); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("fencingpg: commit %q: %w", providerKey, err)
	}
	return nil
}

// SaveReportInTerm stores the report id (insert or overwrite) inside a
// term-checked transaction (InTerm): no fence condition on the row, the
// lease row is the gate. The row's fence column records the writer's fence.
func SaveReportInTerm(ctx context.Context, db TxDB, p *pglock.Provider, providerKey string, fence uint64, id, body string) error {
	f, err := checkFence("save", id, fence)
	if err != nil {
		return err
	}
	return InTerm(ctx, db, p, providerKey, fence, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO reports (id, body, fence) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, fence = EXCLUDED.fence`, id, body, f)
		if err != nil {
			return fmt.Errorf("fencingpg: save %q: %w", id, err)
		}
		return nil
	})
}
