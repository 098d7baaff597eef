package leadership

import (
	"context"
	"fmt"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// Description is what Describe reports about an elector: its composition,
// captured at construction, and nothing secret.
type Description struct {
	// Role is the role elected.
	Role string
	// LockKey is the consumer key, before namespacing (K6).
	LockKey string
	// ProviderKey is the key the backend stores, when the lock reports it
	// (*locking.DistributedLock does); else LockKey.
	ProviderKey string
	// Coordinated is false over a lock that does not coordinate (E9).
	Coordinated bool
	// WhenUncoordinated is the policy applied when Coordinated is false.
	WhenUncoordinated WhenUncoordinated
	// Lease is the effective lease: Options.Lease capped by the lock (T2).
	Lease time.Duration
	// RequestedLease is Options.Lease as given; it differs from Lease when
	// the lock capped it.
	RequestedLease time.Duration
	// RenewInterval is the effective renewal cadence.
	RenewInterval time.Duration
	// RetryInterval is the candidate cadence.
	RetryInterval time.Duration
	// Identity is the identity stored with the lease.
	Identity string
	// LockType is the Go type of the lock, e.g. "*locking.DistributedLock".
	LockType string
}

// Describe reports e's composition without any I/O.
func Describe(e *Elector) Description {
	return Description{
		Role:              e.role,
		LockKey:           e.key,
		ProviderKey:       e.providerKey,
		Coordinated:       e.coordinated,
		WhenUncoordinated: e.opts.WhenUncoordinated,
		Lease:             e.opts.Lease,
		RequestedLease:    e.asked.Lease,
		RenewInterval:     e.opts.RenewInterval,
		RetryInterval:     e.opts.RetryInterval,
		Identity:          e.identity,
		LockType:          e.lockType,
	}
}

// Leader reports who holds the role's lease and its remaining time to live,
// as the backend sees it, through the lock's holder lookup (L7). ok is
// false when nobody holds it. It returns an error matching
// locking.ErrNotSupported when the lock cannot look holders up.
func (e *Elector) Leader(ctx context.Context) (h locking.Holder, ok bool, err error) {
	hl, can := e.lock.(locking.HolderLookup)
	if !can {
		return locking.Holder{}, false, fmt.Errorf("leadership: role %q: holder lookup: %w", e.role, locking.ErrNotSupported)
	}
	defer func() {
		if r := recover(); r != nil {
			h, ok, err = locking.Holder{}, false, fmt.Errorf("leadership: role %q: holder lookup panicked: %v", e.role, r)
		}
	}()
	h, ok, err = hl.Holder(ctx, e.key)
	if err != nil {
		return locking.Holder{}, false, fmt.Errorf("leadership: role %q: holder lookup: %w", e.role, err)
	}
	return h, ok, nil
}
