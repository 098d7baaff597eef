package leadership

import (
	"context"
	"time"
)

// Leadership is what consumers depend on: the state of one role's election
// on this instance. *Elector implements it. It stays this small on purpose,
// so tests can fake it; further capabilities live on *Elector.
type Leadership interface {
	// Role is the role elected.
	Role() string

	// IsLeader reports whether this instance leads now. It reads local
	// state only (no I/O).
	IsLeader() bool

	// IsCoordinated reports whether the lock coordinates replicas. It is
	// false over a disabled lock, where the WhenUncoordinated policy applies.
	IsCoordinated() bool

	// Term counts this instance's acquisitions of the role. It is not a
	// fencing token: another instance's term is unrelated.
	Term() uint64

	// Token returns a context that is done when the current leadership
	// ends; it is done already when this instance does not lead. Work that
	// must only run on the leader should honour it.
	Token() context.Context

	// WaitForLeadership blocks until this instance leads or ctx ends.
	WaitForLeadership(ctx context.Context) error

	// OnChange calls fn, in order, after each transition, on a goroutine of
	// the elector's; fn must not block for long. The returned function
	// unsubscribes.
	OnChange(fn func(Change)) (unsubscribe func())
}

// Change describes a leadership transition.
type Change struct {
	Role     string
	IsLeader bool
	Term     uint64
	// Fence is the term's fencing token (G2): the new term's on
	// acquisition, the ended term's on loss; 0 when the lock issues none.
	Fence  uint64
	Reason Reason
	At     time.Time
}

// Reason says why a transition happened.
type Reason int

// Transition reasons.
const (
	// Acquired: the instance took the lease (or leads uncoordinated).
	Acquired Reason = iota + 1
	// Released: Stop released the lease.
	Released
	// Resigned: Resign released the lease.
	Resigned
	// Refused: the backend refused a renewal (someone else holds the key).
	Refused
	// Expired: the lease ran out locally before a renewal succeeded.
	Expired
)

// String returns the reason's lower-case name, as used in metrics.
func (r Reason) String() string {
	switch r {
	case Acquired:
		return "acquired"
	case Released:
		return "released"
	case Resigned:
		return "resigned"
	case Refused:
		return "refused"
	case Expired:
		return "expired"
	default:
		return "unknown"
	}
}

// WhenUncoordinated is the policy over a lock that does not coordinate
// (E9).
type WhenUncoordinated int

// Policies over an uncoordinated lock.
const (
	// Follow never leads, so replicas cannot all lead by accident. Default.
	Follow WhenUncoordinated = iota + 1
	// Lead leads without coordination: for a single instance or local
	// development.
	Lead
)

// String returns the policy's lower-case name, as used in config.
func (w WhenUncoordinated) String() string {
	switch w {
	case Follow:
		return "follow"
	case Lead:
		return "lead"
	default:
		return "unknown"
	}
}
