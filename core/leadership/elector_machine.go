package leadership

import (
	"context"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// loop is the elector's state machine. It owns the term: the lease, the
// deadlines, the call under way. It has no goroutine of its own. Work
// reaches it as messages in its inbox (call outcomes, the timer, Stop and
// Resign requests, the lock's events); the inbox runs handle for each, one
// at a time, on a goroutine that exists only while messages are queued
// (see inbox). So at most one goroutine runs the machine at any moment,
// and an idle elector costs no goroutine: it waits on a timer.
// Everything other goroutines may read is published through the
// Elector's atomic pointers.
//
// The machine's files: elector_machine.go its state, phases and messages;
// elector_loop.go handle, advance and arm; elector_calls.go lock calls and
// their outcomes; elector_term.go acquiring, renewing and ending a term;
// elector_events.go the lock's events and what the machine learns;
// elector_lifecycle.go Start and Stop.
type loop struct {
	e    *Elector
	base context.Context // Start's context without its cancellation: values for lock calls

	inbox inbox[message] // runs handle for each message, one at a time

	// The fields below belong to the inbox's consumer (handle).
	timer       *time.Timer   // posts msgTimer
	lease       locking.Lease // the current term's lease; nil when not leading
	step        *call         // the acquisition or renewal under way, if any
	pending     int           // other calls under way (release, watch, deregister)
	phase       phase         // where the machine is; see phase
	due         time.Time     // when the next acquisition or renewal is due (phaseCandidate unless follows, phaseLeading)
	sitOutUntil time.Time     // Resign: no acquisition before then (E8)
	wokeDuring  time.Time     // a wake that came while the attempt under way ran (P3); zero if none
	finalTries  int           // refusals in a row that reported at most finalWait left
	follows     bool          // E9: the uncoordinated Follow policy: a candidate that never contends
	tried       bool          // an acquisition attempt has been made
	named       bool          // a release named this instance, and no attempt since (B1)
	registered  time.Time     // when the last attempt the lock answered (acquired or held) was sent: it registered this participant (P1)
	authFailed  bool          // the backend refused the credentials; logged once (O4)
	outage      bool          // the provider failed and has not answered since (E7)
	unacked     bool          // too few replicas acknowledged and none has since (Q2)
	unsent      uint8         // acquisition attempts in a row the lock never sent (locking.ErrNotSent), at most maxUnsent
	stopping    bool          // the first Stop was taken; its stop request follows (phaseStopping)
	stopReq     *request      // phaseStopping: the Stop waiting for the calls under way
	stopErrs    []error

	stopWatch     func()
	watchCancel   context.CancelFunc // ends a subscription attempt (and its retry wait)
	watchFailures int                // subscription attempts failed in a row
	subscriptions int                // EventSubscribed seen so far
	announced     string
	topPriority   int  // the highest participant priority the last refusal reported (B2)
	live          bool // the event subscription is live (P3)
	// droppedAt: when the live subscription dropped, zero while it is
	// live or never was; a candidate's acquisitions wait for it to come
	// back (Q1, see deferForLink).
	droppedAt time.Time
	deferred  bool // an acquisition waits for the subscription (Q1)
	unsure    bool // a renewal of this term failed with an unknown outcome (it may still land)
	// verify: the subscription came back while a renewal was under way;
	// that renewal may have been answered before the server lost its
	// state, so another one follows at once (Q1).
	verify bool

	// When the role became free as this instance learned it, for the
	// handover metric (O6): "handover" from a release notification,
	// "takeover" from the expiry of the holder's lease.
	freeSince time.Time
	freeKind  string
}

// msgKind is the kind of a message to the machine.
type msgKind int

const (
	msgStart msgKind = iota + 1
	msgStop          // Stop's first message: who stops (the Stop request follows)
	msgTimer
	msgOutcome
	msgRequest
	msgEvent
)

// message is one unit of work for the machine.
type message struct {
	kind msgKind
	o    outcome       // msgOutcome
	req  request       // msgRequest; msgStop: the stop request when no successor is named (reply nil: none)
	ev   locking.Event // msgEvent
	life lifeRequest   // msgStart, msgStop
}

// phase is where the machine is in the elector's life.
type phase int

const (
	// phaseIdle: Start has not come yet.
	phaseIdle phase = iota
	// phaseCandidate: no term; an acquisition is made when due, unless
	// the candidate follows (E9: it never contends; only Stop ends the
	// wait).
	phaseCandidate
	// phaseLeading: a term (lease holds its lease); a renewal is made
	// when due.
	phaseLeading
	// phaseGivingBack: no term; a lease whose term already ended is being
	// released, and no acquisition is made until that is done, so the
	// next attempt does not find this instance's own stale lease.
	phaseGivingBack
	// phaseStopping: Stop came; the machine waits for the calls under
	// way, then replies (stopReq).
	phaseStopping
	// phaseStopped: Stop replied; what still arrives is only cleaned up.
	phaseStopped
)

// String names the phase, for tests and debugging.
func (p phase) String() string {
	switch p {
	case phaseIdle:
		return "idle"
	case phaseCandidate:
		return "candidate"
	case phaseLeading:
		return "leading"
	case phaseGivingBack:
		return "giving back"
	case phaseStopping:
		return "stopping"
	default:
		return "stopped"
	}
}

// contends reports whether an acquisition or renewal is made when due.
func (l *loop) contends() bool {
	return l.phase == phaseLeading || (l.phase == phaseCandidate && !l.follows)
}

// newLoop returns the machine of e, idle until Start; its timer is armed
// from Start on.
func newLoop(e *Elector) *loop {
	l := &loop{e: e}
	l.inbox.handle = l.handle
	// The timer's goroutine is the runtime's, one per firing, holding
	// nothing: it runs the machine when idle.
	l.timer = time.AfterFunc(MaxWait, func() { l.inbox.run(message{kind: msgTimer}) })
	l.timer.Stop()
	return l
}
