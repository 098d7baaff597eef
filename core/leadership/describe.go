package leadership

import (
	"fmt"
	"time"
)

// Description is what Describe reports about an elector: its composition,
// fixed at construction, and nothing secret.
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
	// SafetyMargin is the effective margin subtracted from every granted
	// lease (G4).
	SafetyMargin time.Duration
	// Balance and Priority are the options as given (B1, B2).
	Balance  bool
	Priority int

	// The state when Describe was called.

	// IsLeader reports whether this instance led (G3: checked against the
	// clock).
	IsLeader bool
	// Term is this instance's acquisition count.
	Term uint64
	// Fence is the current term's fencing token; 0 when not leading (G2).
	Fence uint64
	// Leader is the leader's identity as this instance learned it, "" when
	// unknown (P2).
	Leader string
	// Subscribed reports that the elector's subscription to its role's
	// events is live: a release or a hand-over wakes it at once (P3), and
	// a leader hears a resign or hand-over request sent through the lock
	// (H4). False before the subscription first comes up (a moment after
	// Start), while it is down (Q1), after Stop, and over a lock without
	// events.
	Subscribed bool
}

// Describe reports e's composition and its current state without any I/O.
func Describe(e *Elector) Description {
	leader, _ := e.Leader()
	return Description{
		Role:              e.role,
		LockKey:           e.key,
		ProviderKey:       e.caps.providerKeyOf(e.key),
		Coordinated:       e.coordinated,
		WhenUncoordinated: e.opts.WhenUncoordinated,
		Lease:             e.opts.Lease,
		RequestedLease:    e.askedLease,
		RenewInterval:     e.opts.RenewInterval,
		RetryInterval:     e.opts.RetryInterval,
		Identity:          e.identity,
		LockType:          fmt.Sprintf("%T", e.lock),
		SafetyMargin:      e.margin,
		Balance:           e.opts.Balance,
		Priority:          e.opts.Priority,
		IsLeader:          e.IsLeader(),
		Term:              e.Term(),
		Fence:             e.Fence(),
		Leader:            leader,
		Subscribed:        e.loop.link.live.Load(),
	}
}
