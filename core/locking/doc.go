// Package locking is HostLoom's lease-based distributed lock: the Lock and
// Lease interfaces consumers depend on, and DistributedLock, which
// implements them over a Provider (Redis/Valkey in package redislock, in
// process in package memlock).
//
// # Keys
//
// Consumer keys are nonempty, have no whitespace or control characters, and
// are at most Options.MaxKeyLength bytes (512 by default); anything else is
// refused with an error matching ErrInvalidKey that quotes the key. The
// provider stores {namespace}:lock:{key}, or with Options.UseHashTags
// {{namespace}}:lock:{key} so that Redis Cluster hashes every key of a
// namespace to the namespace's slot. All other characters are stored
// verbatim.
//
// # Leases
//
// An acquisition is one atomic set-if-absent with expiry storing a random
// owner token of 128 bits; extension and release compare the token
// atomically, so a caller never extends or deletes a lease it does not own.
// A refused acquisition reports the holder's remaining time to live and,
// when the provider stores it (P2), the holder's owner identity
// (*HeldError, learned in the same round trip). Leases longer than
// Options.MaxLease are capped, not refused; the granted duration is visible
// through GrantedLease.
//
// # Fences
//
// With a provider that issues them (memlock and redislock do, in
// AcquireResult.Fence), every acquisition returns a lease implementing Fenced (G1):
// a fencing token issued in the acquisition's own round trip, strictly
// increasing per key across all holders, kept by extensions. Both providers
// issue max(last fence + 1, the backend's clock in microseconds since the
// Unix epoch), so fences keep increasing when the stored state is lost (a
// Redis restart without persistence, FLUSHALL, a failover to a replica that
// missed the last write) as long as the backend's clock does not step back.
// Held.Fence exposes the fence of the plain-lock API. The placeholder leases
// of a disabled lock do not implement Fenced, nor do the leases of providers
// without fences; a stored fence that does not parse fails the acquisition
// with an error matching ErrBadRecord that names the key.
//
// # What a lease does not promise
//
// A lease alone is a timed promise. A holder that pauses longer than its
// lease (GC, SIGSTOP, a slow network) may still believe it holds the key
// after the backend let someone else take it, and Redis' asynchronous
// replication can lose an acquisition on failover, so two holders may
// overlap. The fence makes the overlap harmless only where the effect lands
// in a store that refuses a fence lower than the highest it admitted
// (package core/fencing); effects that do not pass such a check must stop
// when the lease ends and should be idempotent.
//
// # Disabled mode
//
// With Options.Disabled every caller is granted a placeholder lease,
// nothing reaches the provider, and Coordinated reports false, so callers
// (the elector) can refuse to treat it as exclusion. The zero Options
// coordinates. (The deprecated Enabled, set to false on DefaultOptions(),
// still disables, for code written against it.)
//
// # The provider contract
//
// A Provider implements three methods: Acquire (with the fence, and on
// refusal the holder's record and remaining TTL in the same step), Extend
// and Release. Every optional capability is one small interface (L9):
//
//   - Events (Subscriber): Subscribe delivers releases, acquisitions with
//     the new holder's identity, resign requests and the state of the
//     subscription (EventSubscribed when it becomes live, at first and
//     after every reconnection; EventUnsubscribed when it drops; events
//     published while it is down are lost), by callback.
//   - Resign requests (ResignRequester, O1): RequestResign asks a holder to
//     step down; it needs events, through which the holder hears it.
//   - Participants (ParticipantRegistry, P1): every TryAcquireAs and every
//     Extend that extends the lease registers its owner as a participant
//     of the key, inside the same round trip, for two leases after that
//     request; Since is the first registration and survives refreshes. A
//     renewal that finds the lease released or taken registers nobody
//     (H2). Release keeps the registration unless it withdraws
//     (ReleaseWithdrawer); Deregister removes it at once. A stored record that
//     does not parse is skipped: the others are returned with an error
//     matching ErrBadRecord (*RecordError names the key and the record).
//   - Inspection (Inspector, L7, O1): Holder, and Inspect (holder, TTL,
//     last fence and participants of one key in one round trip); Keys lists
//     the namespace's keys (a full scan of the backend: for tools, not hot
//     paths).
//   - Job slots (RecordStore with jobrecord.State, L8, S9–S11, V1):
//     Advance, State and the scheduler's job records, under
//     {namespace}:state: and {namespace}:jobs:. The provider only stores a
//     versioned record per job; claims, completions and pauses are decided
//     by package core/jobrecord. A provider that implements jobrecord.Jobs
//     itself is used as it is.
//   - io.Closer: Close of the lock closes the provider.
//
// New finds them once. Features reports them as values on consumer keys,
// nil when absent (X3): consumers read them once with FeaturesOf and keep
// what they need. Capabilities reports the same as booleans. A method of
// the lock for a capability the provider lacks returns an error matching
// ErrNotSupported (never a silent no-op), for code written against the
// lock's method set. docs/providers.md is the guide for backend
// authors; package lockingtest is the conformance suite.
//
// # Options
//
// Fields of Options left zero take their documented defaults (L10); a field
// set to an invalid value is an error naming the field and its value,
// matching ErrInvalidOptions.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package locking
