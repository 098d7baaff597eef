// Package fencing makes a store refuse the writes of a deposed leader (rule
// G5; the rule ids are explained in docs/rules.md).
//
// # Why fences
//
// A lease ends on the holder's clock, but a holder can be paused (a GC
// pause, SIGSTOP, a suspended VM) or its write can sit in a network buffer
// past the moment its lease expired and a successor took over. When it
// resumes, its write lands after the successor's: two leaders' effects
// interleave, whatever the holder checked before writing. A fencing token
// closes that gap where the effect lands. Every acquisition of a fenced lock
// carries a number larger than any issued before for the same key
// (locking.Fenced); the store records the highest fence it admitted and
// refuses a write that carries a lower one. The paused leader's late write
// then fails with ErrStale instead of overwriting its successor's.
//
// # The gate
//
// Gate does that for Redis and Valkey over a go-redis
// redis.UniversalClient. For each resource (a name the caller chooses: a
// document, a queue partition, a report) it keeps the highest admitted fence
// under one key and admits a fence f only when f is at least that fence, in
// one Lua script. Equal fences are admitted, so one term may write any number
// of times.
//
//   - Admit records the fence and performs nothing else.
//   - Set stores a string value when the fence is admitted: check, record and
//     write are one script, one round trip.
//   - Append adds an entry to a list the same way; in the list's order the
//     writers' fences never go back down.
//
// Highest, Get and Entries read what the gate stored. Fences are uint64
// values compared exactly (the script compares decimal strings, never Lua
// doubles). Fence 0 is refused with ErrZeroFence: it is what a lock without
// fences reports, and admitting it would let every writer through. A gate
// key that holds something other than a decimal number is reported with an
// error naming the key.
//
// # Where the fence comes from
//
// The caller passes the fence; the package depends on no elector. Inside
// the work of a leader, take it from the term's context (the Token, a
// scheduler run, a leader's channel reader):
//
//	fence, ok := leadership.FenceFrom(ctx)
//	if !ok {
//		return errors.New("the lock issues no fences: use a fenced provider")
//	}
//	err := gate.Set(ctx, "daily-report", fence, body)
//	if errors.Is(err, fencing.ErrStale) {
//		return nil // a successor has taken over; it does this work now
//	}
//
// With the plain lock API, the fence is the lease's: lease.(locking.Fenced).Fence().
//
// # Keys and Redis Cluster
//
// The keys of a resource are prefix + "{" + resource + "}" followed by
// ":gate", ":value" or ":log" (Keys). The braces are a Redis Cluster hash tag:
// the gate and the data share a slot, so one script can read and write both.
// The prefix defaults to DefaultPrefix and must not contain braces; a
// resource must not be empty or start with '}'. Gate keys never expire: a
// gate that forgot its fence would admit a stale writer again.
//
// # What it guarantees, and what it does not
//
// Guaranteed: for one resource, an effect written through Set or Append is
// applied only if no higher fence was admitted before it; in the store's
// order, admitted fences never decrease, so two terms' effects never
// interleave, however long a writer was paused.
//
// Not guaranteed:
//   - Effects that do not pass through the gate (an e-mail, a call to
//     another service, a write to another store) are not fenced. Admit
//     followed by such an effect is still open to the pause in between. Such a
//     store needs its own check (the SQL pattern in examples/fencing-postgres
//     is one: "UPDATE ... WHERE fence <= $n").
//   - The gate is as durable as the server that holds it. Redis replicates
//     asynchronously and persists only as configured: a failover to a
//     replica that missed the last write, or a restart without persistence,
//     loses the recorded fence (with the data written next to it), and an
//     older writer may be admitted again until a newer one writes. Use
//     persistence (appendfsync always) and WAIT where that matters.
//   - Fences order the writers of one resource. Writes to two resources are
//     two independent checks, and a resource must be written with the fences
//     of one lock key (one role): fences of different keys are unrelated.
//
// # Errors
//
// Errors are prefixed "fencing: ". A refused fence is a *StaleError that
// matches ErrStale. A Gate built with a nil client returns ErrNilClient from
// every operation instead of panicking; an invalid prefix is an error from
// New, an invalid resource an error from the operation, each naming the
// value.
package fencing
