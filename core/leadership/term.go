package leadership

import (
	"context"
	"errors"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// ErrNotLeader is returned by Assert when the context's term has ended, or
// when the context does not derive from a Token. It is also the cause
// (context.Cause) of every ended Token.
var ErrNotLeader = errors.New("leadership: not leader")

// The causes an ended Token reports through context.Cause, one per
// reason; all of them match ErrNotLeader.
var (
	errEndedReleased = &endedError{Released}
	errEndedResigned = &endedError{Resigned}
	errEndedRefused  = &endedError{Refused}
	errEndedExpired  = &endedError{Expired}
)

// endedError is the cause of an ended Token.
type endedError struct{ reason Reason }

func (e *endedError) Error() string { return "leadership: term ended: " + e.reason.String() }

// Is makes errors.Is(err, ErrNotLeader) hold.
func (e *endedError) Is(target error) bool { return target == ErrNotLeader }

func endedCause(r Reason) error {
	switch r {
	case Released:
		return errEndedReleased
	case Resigned:
		return errEndedResigned
	case Refused:
		return errEndedRefused
	default:
		return errEndedExpired
	}
}

// termState is an immutable snapshot of this instance's leadership. The
// loop goroutine publishes a new one at every transition and renewal;
// readers load it with one atomic read.
type termState struct {
	leader   bool
	term     uint64
	fence    uint64
	deadline time.Time // leader: the term has ended at now >= deadline (G3, G4)
	token    context.Context
	// led is closed at the next acquisition. A leader's state carries the
	// channel its follower state will have, so a reader that finds the
	// term ended by the clock before the loop noticed can still wait. It
	// is made by the first WaitForLeadership that waits (nil until then:
	// most electors are never waited for), which publishes a copy of the
	// state with it; so the loop publishes every later state with
	// publish, which keeps it.
	led chan struct{}
}

// publish replaces the elector's state with next(cur), where cur is the
// state published: a WaitForLeadership may have added the led channel
// to it meanwhile, and next carries it over (only the loop changes the
// other fields).
func (e *Elector) publish(next func(cur *termState) *termState) {
	for {
		cur := e.state.Load()
		if e.state.CompareAndSwap(cur, next(cur)) {
			return
		}
	}
}

// live reports whether the state is a term that still runs at now (G3).
func (s *termState) live(now time.Time) bool { return s.leader && now.Before(s.deadline) }

// termKey is the context key under which a Token answers with itself.
type termKey struct{}

// termToken is the Token of one term. The loop cancels it when the term
// ends, at the latest when the local deadline passes; Err checks the
// deadline itself as well, so a process resumed after a pause past the
// deadline sees the term ended on its first call, before any timer or the
// loop has run (G3). It is found through Value by Assert and FenceFrom in
// every context derived from it (G2).
type termToken struct {
	context.Context
	cancel context.CancelCauseFunc
	e      *Elector
	term   uint64
	fence  uint64
}

// Err implements context.Context; see termToken.
func (t *termToken) Err() error {
	if err := t.Context.Err(); err != nil {
		return err
	}
	if s := t.e.state.Load(); s.term == t.term && s.live(time.Now()) {
		return nil
	}
	// The term is over by the clock: cancel now rather than report an
	// error while Done is still open.
	t.cancel(errEndedExpired)
	return t.Context.Err()
}

// Value implements context.Context. A Token answers termKey with
// itself, and locking.FenceKey with its fence when it has one.
func (t *termToken) Value(key any) any {
	switch key {
	case termKey{}:
		return t
	case locking.FenceKey{}:
		if t.fence != 0 {
			return t.fence
		}
		return nil
	}
	return t.Context.Value(key)
}

// Assert returns nil only while ctx's term is live: ctx must be a Token or
// derive from one, and the term's local deadline must not have passed. It
// compares the monotonic clock with the deadline when called (G3), so work
// that calls Assert before each effect does no effect after its term ended,
// even after the process was paused. Otherwise it returns ErrNotLeader.
// Assert does no I/O and does not allocate.
//
// The monotonic clock stops while a virtual machine is suspended: a VM
// resumed after its lease ran out on the backend still believes its term
// runs for the remainder it had when suspended. Only a fence checked where
// the effect lands (FenceFrom, package core/fencing) covers that case.
func Assert(ctx context.Context) error {
	t, ok := ctx.Value(termKey{}).(*termToken)
	if !ok || t.Err() != nil {
		return ErrNotLeader
	}
	return nil
}

// FenceFrom returns the fencing token of the term ctx belongs to (G2): ctx
// must be a Token or derive from one (a scheduler run's ctx, a channel
// reader's work). ok is false when ctx belongs to no term, or the lock
// issues no fences. The fence of an ended term is still reported: a store
// that checks fences refuses it once a successor has written.
//
// It is locking.FenceFrom, which reads locking.FenceKey: a Token answers
// that key with its fence, so providers' term checks read the fence
// without importing this package.
func FenceFrom(ctx context.Context) (fence uint64, ok bool) {
	return locking.FenceFrom(ctx)
}
