// Package fencingpg shows how a PostgreSQL table refuses the writes of a
// deposed leader with a fence column (rule G5 of HostLoom; the rule ids are
// explained in docs/rules.md of the repository). It is an example in a
// module of its own, so HostLoom's go.mod gains no database driver; copy the
// SQL, not the package. README.md explains the pattern and its limits.
//
// # The pattern
//
// Every row records the fence of the term that wrote it last, and a write
// only matches the row when its fence is at least that one:
//
//	UPDATE reports SET body = $2, fence = $3 WHERE id = $1 AND fence <= $3
//
//	INSERT INTO reports AS r (id, body, fence) VALUES ($1, $2, $3)
//	ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, fence = EXCLUDED.fence
//	WHERE r.fence <= EXCLUDED.fence
//
// Zero rows affected means a later term wrote the row: the write is refused
// and reported as fencing.ErrStale. The check and the write are one
// statement, so no pause between them exists. WithFence does the same for a
// whole transaction through a gate table (fences), for writes that span
// rows or tables.
//
// # Where the fence comes from
//
// From the leader's term, passed by the caller:
//
//	fence, ok := leadership.FenceFrom(ctx)
//	if !ok {
//		return errors.New("the lock issues no fences")
//	}
//	err := fencingpg.SaveReport(ctx, pool, "daily", fence, body)
//	if errors.Is(err, fencing.ErrStale) {
//		return nil // a successor has written; this term is over
//	}
//
// # The term check, when the lease is in the same database
//
// Over the PostgreSQL lock (core/locking/pglock), InTerm checks the term
// inside the transaction itself (rule D3): the lease row still carries the
// fence and has not run out by the database's clock, and stays
// share-locked until commit, so no successor can take the lease before the
// transaction ends. Its writes need no fence column. SaveReportInTerm is
// SaveReport written that way.
//
// # Tests
//
// The tests start a private PostgreSQL server on 127.0.0.1 (package
// core/testing/pgtest) and skip when it cannot start, or fail when CI is set.
// The paused-leader test starts the test binary again as the leader's
// process, so it can be stopped with SIGSTOP.
package fencingpg
