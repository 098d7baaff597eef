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
// With a provider that issues them (ProviderAcquirer: memlock and
// redislock), every acquisition returns a lease implementing Fenced (G1):
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
// With Options.Enabled false every caller is granted a placeholder lease,
// nothing reaches the provider, and Coordinated reports false, so callers
// (the elector) can refuse to treat it as exclusion.
//
// # Optional capabilities
//
// Providers may publish releases (Watcher), so waiters wake at once instead
// of polling; look holders up (HolderLookup); and keep monotonic state values
// (StateStore) for the scheduler's once-per-slot records. DistributedLock
// exposes what its provider offers and reports ErrNotSupported otherwise:
//
//   - Events (EventWatcher, P2, O1): WatchEvents delivers releases,
//     acquisitions with the new holder's identity (announced by the
//     acquisition itself), resign requests (RequestResign, for operators),
//     and the state of the subscription: EventSubscribed when it becomes
//     live, at first and after every reconnection, EventUnsubscribed when it
//     drops. Events published while it is down are lost. Watch keeps
//     working and wakes on releases only.
//   - Participants (ParticipantRegistry, P1): every TryAcquireAs and every
//     Extend registers its owner as a participant of the key, inside the
//     same round trip, for two leases after that request; Since is the
//     first registration and survives refreshes. Release keeps the
//     registration; Deregister removes it at once. A stored record that
//     does not parse is skipped: the others are returned with an error
//     matching ErrBadRecord (*RecordError names the key and the record).
//   - Inspection (O1): Inspect reports holder, TTL, last fence and
//     participants of one key in one round trip; Keys lists the namespace's
//     keys (a full scan of the backend: for tools, not hot paths).
//
// Custom providers that implement only Provider keep working: their leases
// carry no fence and their refusals no owner, WatchEvents returns a nil
// channel, and the other methods above report ErrNotSupported.
package locking
