// Package pglock is a lock provider over PostgreSQL (rules D1–D4 of
// HostLoom; the rule ids are explained in docs/rules.md of the
// repository): leases, fences, participants, holder lookup and events for
// package locking, the elector and the scheduler, in a module of its own so
// HostLoom's library module gains no database driver.
//
//	pool, _ := pgxpool.New(ctx, dsn)
//	lock, err := pglock.NewLock(pool, pglock.Options{}, locking.DefaultOptions())
//	defer lock.Close() // closes the provider, not the pool
//
// A lock over pglock has every optional capability of the provider
// contract (L9): events and resign requests (unless
// Options.DisableNotifications: then ForLock leaves them out, so the lock
// reports them missing), participants, inspection and job slots.
//
// # Tables
//
// Five tables, created with CREATE TABLE IF NOT EXISTS by the first
// operation (Options.Table, default hostloom_locks, and the same name with
// _participants, _state, _jobs and _job_runs), or by the SQL of Schema for teams that manage
// their schema (Options.ExternalSchema). The first operation also checks
// that the tables have the columns this version uses, and names the table
// when they do not. Schema's SQL may be run again on existing tables: it
// adds what a later version needs (the _jobs table's extra column, which
// keeps job record fields added after the table's other columns).
//
// A key's lease row is kept after a release (value and expiry cleared), so
// its last fence survives. Rows of keys nobody uses any more stay until an
// operator deletes them; deleting one is safe (see Fences).
//
// # Statements
//
// Acquire, extend and release are one statement each, one round trip:
//
//   - Acquire is an INSERT ... ON CONFLICT DO UPDATE whose SET leaves a
//     held row as it is. The upsert locks the key's row either way, so its
//     RETURNING reports the latest holder's ownership record and remaining
//     time when the key is held, in the same round trip, and two
//     concurrent attempts serialise on the row: exactly one takes a free
//     key. The same statement registers the participant and announces the
//     acquisition. The price: a refused attempt rewrites the held row
//     unchanged (one small update in place); candidates with a live
//     subscription attempt only when the lease may have run out, or at a
//     release.
//   - Extend and release are UPDATEs that match the ownership record and an
//     unexpired lease.
//
// Every time is the database server's: clock_timestamp(), read once per
// statement; the client sends durations only. Keys, owners and all other
// data are parameters, never SQL text; table names are validated as
// identifiers and quoted.
//
// # Connections
//
// Acquisitions and extensions that fall due while one is on the wire share
// the next round trip, pipelined on one connection of the pool (each still
// its own statement and transaction), so electors need at most two of the
// pool's connections at a time however many roles they serve; releases and
// reads take their own, and notifications one more (below). A round trip
// is bounded by a context of its own, one second past the latest of its
// callers' deadlines, not by theirs, so a caller's deadline does not close
// the connection the calls behind it need: a caller whose context ends
// while its call is queued returns at once and nothing is sent; one whose
// call is on the wire returns its context's error after the reply or that
// second (so an acquisition's cleanup follows it). A connection the server
// closed fails its round trip at once; the next one takes a new connection
// from the pool. A connection that stays silent holds the calls behind it
// until that bound.
//
// # Fences
//
// An acquisition issues max(last fence + 1, server time in µs) (G1): fences
// strictly increase per key across holders, and across a lease row deleted
// by hand or lost with a restore, as long as the server's clock does not
// step back by more than the time since the lost fence was issued.
//
// # PgBouncer
//
// LISTEN needs a session of its own, which PgBouncer in transaction mode
// cannot keep: set Options.DisableNotifications there. With it every
// statement runs with pgx.QueryExecModeExec (the extended protocol with an
// unnamed statement, parameter types from the Go values), whatever the
// pool's DefaultQueryExecMode: no named prepared statement and no session
// setting outlives a statement (the term check sets one for its
// transaction only), so a pool through PgBouncer in transaction mode
// works. With notifications on, the provider's own statements are
// prepared once per connection (pgx.QueryExecModeCacheStatement) and then
// only executed, so the server does not plan them on every call; the term
// check, which runs on the caller's connection, is never prepared. The
// tests run the conformance suite and the term check through a private
// PgBouncer in transaction mode with a single server connection shared by
// every client (where a named prepared statement of pgx's default mode
// collides at once).
//
// # Notifications
//
// Releases (naming a handover target, B1), acquisitions (naming the new
// holder, P2), renewals of an elector's lease (the holder and the extended
// lease's time to live, locking.EventExtended: candidates sleep on to its
// end instead of trying when the previous lease would have run out, P3)
// and resign requests (O1) are sent with pg_notify in the statement that
// causes them, on a channel named like the lease table, as JSON; they are
// delivered at commit and none costs a statement of its own. Each provider keeps one dedicated
// LISTEN connection (a copy of the pool's connection configuration), opened
// by the first subscription and owned by one goroutine until Close. It reconnects
// with backoff and reports EventUnsubscribed and EventSubscribed like
// redislock's subscription does, so an elector polls while it is down.
// With DisableNotifications nothing is published or listened to: electors
// poll on their RetryInterval and the holder's remaining lease, and resign
// requests are not supported.
//
// # The term check
//
// CheckTerm verifies inside the caller's pgx.Tx that the lease row still
// carries the term's fence and has not run out by the server's clock, and
// share-locks the row until the transaction ends, so no successor can take
// the key before it commits (D3). See CheckTerm for the lock mode, what it
// costs, and the idle timeout that keeps a paused holder from stalling its
// successor.
//
// # What it does not promise
//
// The same as every lease lock: at most one holder while the database and
// its clock behave. A holder learns that its lease ended from its own
// monotonic clock (the elector's deadline) or from a refused extension;
// effects outside the database need fencing (core/fencing) or the term
// check. A failover to a standby that missed the latest commits can forget
// a lease and its fence (the fence then comes from the new primary's
// clock); use synchronous replication if that matters.
//
// # Job slots
//
// The scheduler's job records (S9–S11: claims, completion, recovery, pause,
// history) are kept in two more tables, a row per job and its history
// ring; package jobrecord decides them, as for every provider. A claim, a
// completion and a pause read the job's row with its version (xmin) and
// write it back in one statement only if no one wrote it since, so rows
// written by earlier releases, and writes by processes still running one,
// are seen; holds and expiries are measured on the server's clock. A
// record field without a column of its own is kept in the extra column.
package pglock
