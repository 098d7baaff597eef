package fencingpg

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hostloom/hostloom/core/fencing"
)

// Schema creates the example's tables. reports is an ordinary table with a
// fence column: every row remembers the fence of the term that wrote it
// last. fences is a gate table for WithFence: one row per resource, holding
// the highest fence admitted for it. Fences are bigint (a fence above
// math.MaxInt64 is refused by this package; fences from HostLoom's locks are
// far below it). The CHECKs keep fence 0 ("no fence") out.
const Schema = `
CREATE TABLE IF NOT EXISTS reports (
    id    text   PRIMARY KEY,
    body  text   NOT NULL,
    fence bigint NOT NULL CHECK (fence > 0)
);
CREATE TABLE IF NOT EXISTS fences (
    resource text   PRIMARY KEY,
    fence    bigint NOT NULL CHECK (fence > 0)
);
CREATE TABLE IF NOT EXISTS report_lines (
    seq    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    report text   NOT NULL,
    line   text   NOT NULL,
    fence  bigint NOT NULL
);`

// updateSQL writes an existing row when the writer's fence is at least the
// row's: a stale writer matches no row.
const updateSQL = `
UPDATE reports SET body = $2, fence = $3
WHERE id = $1 AND fence <= $3`

// upsertSQL inserts the row, or updates it under the same condition as
// updateSQL. ON CONFLICT ... WHERE re-checks the condition on the newest
// version of the row, after waiting for a concurrent writer's transaction.
const upsertSQL = `
INSERT INTO reports AS r (id, body, fence) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, fence = EXCLUDED.fence
WHERE r.fence <= EXCLUDED.fence`

// admitSQL raises the gate row of a resource to the writer's fence, or
// creates it; a stale writer affects no row. The updated row stays locked
// until the transaction ends, so writers of one resource take turns.
const admitSQL = `
INSERT INTO fences AS f (resource, fence) VALUES ($1, $2)
ON CONFLICT (resource) DO UPDATE SET fence = EXCLUDED.fence
WHERE f.fence <= EXCLUDED.fence`

// ErrNotFound is returned by UpdateReport when the row does not exist.
var ErrNotFound = errors.New("fencingpg: no such row")

// DB is what the single-statement writes need: *pgx.Conn, *pgxpool.Pool and
// pgx.Tx implement it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// TxDB is what WithFence needs: *pgx.Conn and *pgxpool.Pool implement it.
type TxDB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Migrate creates the tables of Schema when they do not exist.
func Migrate(ctx context.Context, db DB) error {
	if _, err := db.Exec(ctx, Schema); err != nil {
		return fmt.Errorf("fencingpg: migrate: %w", err)
	}
	return nil
}

// checkFence refuses fence 0 (fencing.ErrZeroFence) and fences that do not
// fit PostgreSQL's bigint.
func checkFence(op, resource string, fence uint64) (int64, error) {
	if fence == 0 {
		return 0, fmt.Errorf("%w: %s %q", fencing.ErrZeroFence, op, resource)
	}
	if fence > math.MaxInt64 {
		return 0, fmt.Errorf("fencingpg: %s %q: fence %d does not fit a bigint column (max %d)", op, resource, fence, int64(math.MaxInt64))
	}
	return int64(fence), nil
}

// UpdateReport stores body in the existing report id when fence is at least
// the fence of the row's last writer (UPDATE ... WHERE fence <= $n). It
// returns a *fencing.StaleError (errors.Is(err, fencing.ErrStale)) when a
// higher fence wrote the row, and ErrNotFound when there is no such row.
func UpdateReport(ctx context.Context, db DB, id string, fence uint64, body string) error {
	f, err := checkFence("update", id, fence)
	if err != nil {
		return err
	}
	tag, err := db.Exec(ctx, updateSQL, id, body, f)
	if err != nil {
		return fmt.Errorf("fencingpg: update %q: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return refused(ctx, db, "reports", id, fence)
}

// SaveReport inserts the report id, or updates it like UpdateReport (one
// INSERT ... ON CONFLICT DO UPDATE ... WHERE statement). It returns a
// *fencing.StaleError when a higher fence wrote the row.
func SaveReport(ctx context.Context, db DB, id string, fence uint64, body string) error {
	f, err := checkFence("save", id, fence)
	if err != nil {
		return err
	}
	tag, err := db.Exec(ctx, upsertSQL, id, body, f)
	if err != nil {
		return fmt.Errorf("fencingpg: save %q: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return refused(ctx, db, "reports", id, fence)
}

// refused builds the error of a write that matched no row: it reads the
// row's current fence (a second statement, only to report it) and returns a
// *fencing.StaleError, or ErrNotFound when the row does not exist.
func refused(ctx context.Context, db DB, table, id string, fence uint64) error {
	var current int64
	key := "id"
	if table == "fences" {
		key = "resource"
	}
	err := db.QueryRow(ctx, "SELECT fence FROM "+table+" WHERE "+key+" = $1", id).Scan(&current)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("fencingpg: %q refused, and reading its fence failed: %w", id, err)
	}
	return &fencing.StaleError{Resource: id, Fence: fence, Highest: uint64(current)}
}

// WithFence runs fn in a transaction that first admits fence for resource
// through the fences table: when a higher fence has been admitted, fn is not
// called and a *fencing.StaleError is returned. Otherwise the gate row stays
// locked until the transaction ends, so every write fn makes commits
// together with the admission, and a successor's transaction waits for it
// (then sees its fence) — the writes of two terms never interleave, over any
// number of tables. When fn returns an error the transaction is rolled back
// (the admission too) and the error returned.
//
// Use PostgreSQL's default isolation, READ COMMITTED: under REPEATABLE READ
// or SERIALIZABLE a concurrent admission fails with a serialization error
// instead of waiting. A writer paused inside the transaction keeps the gate
// row locked; bound that with idle_in_transaction_session_timeout.
func WithFence(ctx context.Context, db TxDB, resource string, fence uint64, fn func(pgx.Tx) error) error {
	f, err := checkFence("admit", resource, fence)
	if err != nil {
		return err
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("fencingpg: begin %q: %w", resource, err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // after Commit: does nothing
	tag, err := tx.Exec(ctx, admitSQL, resource, f)
	if err != nil {
		return fmt.Errorf("fencingpg: admit %q: %w", resource, err)
	}
	if tag.RowsAffected() != 1 {
		return refused(ctx, tx, "fences", resource, fence)
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("fencingpg: commit %q: %w", resource, err)
	}
	return nil
}
