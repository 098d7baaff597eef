package locking

import (
	"context"
	"time"
)

// Lock is what the elector and other consumers depend on, and what custom
// backends implement. *DistributedLock implements it over a Provider.
type Lock interface {
	// TryAcquire makes one attempt to take key for lease. It never waits for
	// the key to become free: a key held by someone else yields an error for
	// which errors.Is(err, ErrNotAcquired) holds; errors.As with *HeldError
	// reports the holder's remaining time to live when the backend knows it.
	TryAcquire(ctx context.Context, key string, lease time.Duration) (Lease, error)

	// Coordinated reports whether the lock excludes other callers. It is
	// false for a disabled lock, which grants every caller a placeholder.
	Coordinated() bool
}

// Lease is a held key. Its methods are safe for concurrent use.
type Lease interface {
	// Key is the consumer key the lease was acquired for (before
	// namespacing).
	Key() string

	// Extend pushes the lease's expiry to now+lease (capped like the
	// acquisition). It returns an error matching ErrLeaseLost when the
	// backend refuses because the lease expired or is held by someone else;
	// any other error means the outcome is unknown (transport failure).
	Extend(ctx context.Context, lease time.Duration) error

	// Release gives the key up so another caller can take it at once.
	// Releasing a lease that is already lost returns an error matching
	// ErrLeaseLost; it never deletes someone else's lease.
	Release(ctx context.Context) error
}

// GrantedLease is implemented by the leases of *DistributedLock: it exposes
// the duration the backend actually granted (after the MaxLease cap) and the
// owner identity stored with the lease.
type GrantedLease interface {
	Lease
	// Granted is the duration asked of the backend by the latest successful
	// acquisition or extension, after capping at MaxLease.
	Granted() time.Duration
	// Owner is the identity stored with the lease and reported by holder
	// lookups.
	Owner() string
}

// OwnedLock is implemented by locks that store an owner identity with each
// lease (reported by Holder). *DistributedLock implements it; the elector
// uses it, when present, to record its identity.
type OwnedLock interface {
	Lock
	TryAcquireAs(ctx context.Context, key string, lease time.Duration, owner string) (Lease, error)
}

// Watcher is implemented by locks that can tell a waiter the moment a key is
// released (L7). Notifications are coalesced and best effort: a waiter must
// still retry on its own cadence, because a notification can be lost (for
// example while the subscription reconnects).
type Watcher interface {
	// Watch returns a channel that receives a value (coalesced, never
	// blocking the sender) after key is released, and a function that ends
	// the watch. The channel is never closed.
	Watch(key string) (released <-chan struct{}, stop func())
}

// Holder describes who holds a key.
type Holder struct {
	// Owner is the identity stored with the lease.
	Owner string
	// TTL is the lease's remaining time to live, as the backend sees it.
	TTL time.Duration
}

// HolderLookup is implemented by locks that can report who holds a key (L7).
type HolderLookup interface {
	// Holder returns the current holder of key; ok is false when nobody
	// holds it.
	Holder(ctx context.Context, key string) (h Holder, ok bool, err error)
}

// Limits is implemented by locks that enforce a key length and a lease cap
// (L1). The elector checks for it with a type assertion: a custom Lock
// without it is responsible for its own limits.
type Limits interface {
	MaxKeyLength() int
	MaxLease() time.Duration
}

// StateStore is the small state API the scheduler uses (L8): a monotonic
// value per key under the lock's namespace.
type StateStore interface {
	// Advance sets key to value when value is greater than the stored value
	// (or nothing is stored), in one round trip. It reports whether it set
	// the value and the value stored afterwards.
	Advance(ctx context.Context, key string, value int64) (advanced bool, current int64, err error)
	// State reads key's value; ok is false when nothing is stored.
	State(ctx context.Context, key string) (value int64, ok bool, err error)
}
