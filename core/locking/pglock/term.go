package pglock

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/hostloom/hostloom/core/locking"
)

// ErrTermEnded is matched by the error of a term check whose lease row
// carries another fence, has been released or has expired by the server's
// clock: the caller's term is over, and its transaction must not commit.
// Such errors match fencing.ErrStale (the same value as locking.ErrStaleFence) as well. Use errors.As with
// *TermError for the details.
var ErrTermEnded = errors.New("pglock: the term has ended")

// ErrNoFence is returned by CheckLeader for a context that carries no
// term's fence (not derived from an elector's Token, or over a lock
// without fences).
var ErrNoFence = errors.New("pglock: the context carries no fence")

// TermError is the error of a failed term check: the row of Key carries
// fence Current (0 when the key has no row), while the caller's term has
// Fence; Expired reports that the fences match but the lease is released
// or has run out by the server's clock. errors.Is(err, ErrTermEnded) and
// errors.Is(err, locking.ErrStaleFence) hold for it.
type TermError struct {
	Key     string
	Fence   uint64
	Current uint64
	Expired bool
}

func (e *TermError) Error() string {
	switch {
	case e.Current == 0:
		return fmt.Sprintf("pglock: the term has ended: %q has no lease", e.Key)
	case e.Expired:
		return fmt.Sprintf("pglock: the term has ended: the lease of %q with fence %d has run out", e.Key, e.Fence)
	default:
		return fmt.Sprintf("pglock: the term has ended: %q has fence %d, this term %d", e.Key, e.Current, e.Fence)
	}
}

// Is makes errors.Is hold for ErrTermEnded and locking.ErrStaleFence.
func (e *TermError) Is(target error) bool {
	return target == ErrTermEnded || target == locking.ErrStaleFence
}

// CheckTerm verifies, inside the caller's transaction tx, that the lease
// of providerKey (an elector's Describe(e).ProviderKey, or
// DistributedLock.ProviderKey) still carries fence and has not run out by
// the server's clock, and keeps it so until tx ends: it takes a FOR SHARE
// lock on the lease row, which every acquisition, extension and release
// of the key must wait for. So no successor can take the key before tx
// commits or rolls back, and a write committed in tx is never a deposed
// holder's.
//
// FOR SHARE rather than FOR UPDATE: concurrent transactions of the same
// term check in parallel (share locks do not conflict with one another)
// while every write to the row waits; FOR KEY SHARE would let a
// successor's acquisition through, since it changes no key column.
//
// The lock also holds off the holder's own renewal while tx is open, and a
// refused candidate's attempt: keep term-checked transactions short beside
// the lease's renew interval. For the rest of tx, CheckTerm lowers the
// session's idle_in_transaction_session_timeout to the lease's remaining
// time (unless a smaller one is set), so a holder paused inside tx (a
// stopped process, a lost network) is disconnected by the server once its
// lease has run out, releasing the lock, instead of keeping its successor
// waiting.
//
// Run it as the first statement that matters, under READ COMMITTED (the
// default); under REPEATABLE READ or SERIALIZABLE a concurrent change of
// the row fails the check with a serialization error instead. table is
// the provider's Table() (Options.Table, schema-qualified "schema.table"
// when Options.Schema is set); it is validated like Options.Table. It
// returns nil when the term is live, a *TermError when it has ended, and
// other errors (wrapped) when the check could not run; after any error tx
// should be rolled back.
func CheckTerm(ctx context.Context, tx pgx.Tx, table, providerKey string, fence uint64) error {
	schema, name := "", table
	for i := 0; i < len(table); i++ {
		if table[i] == '.' {
			schema, name = table[:i], table[i+1:]
			break
		}
	}
	if name == "" {
		return fmt.Errorf("%w: table %q: want a table name, optionally schema-qualified", ErrInvalidOptions, table)
	}
	o := Options{Schema: schema, Table: name}
	if err := o.Validate(); err != nil {
		return err
	}
	return checkTerm(ctx, tx, newTables(schema, name).expand(checkTermSQL), providerKey, fence)
}

// CheckTerm is the package's CheckTerm on the provider's own table.
func (p *Provider) CheckTerm(ctx context.Context, tx pgx.Tx, providerKey string, fence uint64) error {
	return checkTerm(ctx, tx, p.sql.checkTerm, providerKey, fence)
}

// CheckLeader is CheckTerm with the fence of the term ctx belongs to
// (locking.FenceFrom: an elector's Token, a scheduler run's context, or
// any context derived from them). It returns ErrNoFence when ctx carries
// none.
func (p *Provider) CheckLeader(ctx context.Context, tx pgx.Tx, providerKey string) error {
	fence, ok := locking.FenceFrom(ctx)
	if !ok {
		return fmt.Errorf("pglock: check term %q: %w", providerKey, ErrNoFence)
	}
	return p.CheckTerm(ctx, tx, providerKey, fence)
}

func checkTerm(ctx context.Context, tx pgx.Tx, sql, key string, fence uint64) error {
	if tx == nil {
		return fmt.Errorf("pglock: check term %q: nil transaction", key)
	}
	if fence == 0 {
		return fmt.Errorf("pglock: check term %q: %w", key, locking.ErrZeroFence)
	}
	if fence > math.MaxInt64 {
		return &TermError{Key: key, Fence: fence}
	}
	var current uint64
	var live bool
	var set *string
	err := tx.QueryRow(ctx, sql, execMode, key, int64(fence)).Scan(&current, &live, &set)
	if errors.Is(err, pgx.ErrNoRows) {
		return &TermError{Key: key, Fence: fence}
	}
	if err != nil {
		return opError(fmt.Sprintf("check term %q", key), ctx, err)
	}
	if current != fence {
		return &TermError{Key: key, Fence: fence, Current: current}
	}
	if !live {
		return &TermError{Key: key, Fence: fence, Current: current, Expired: true}
	}
	return nil
}
