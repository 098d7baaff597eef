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
// A refused acquisition reports the holder's remaining time to live
// (*HeldError). Leases longer than Options.MaxLease are capped, not refused;
// the granted duration is visible through GrantedLease.
//
// # What a lease does not promise
//
// A lease is a timed promise, not a fencing token. A holder that pauses
// longer than its lease (GC, SIGSTOP, a slow network) may still believe it
// holds the key after the backend let someone else take it, and Redis'
// asynchronous replication can lose an acquisition on failover. Work guarded
// by a lease must stop when the lease ends and should be idempotent.
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
// (StateStore) for the scheduler's once-per-slot records.
package locking
