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
// elector_link.go the notification link's own machine (Q1);
// elector_lifecycle.go Start and Stop.
type loop struct {
	e    *Elector
	base context.Context // Start's context without its cancellation: values for lock calls

	inbox inbox[message] // runs handle for each message, one at a time

	// The fields below belong to the inbox's consumer (handle).
	timer   wakeTimer // runs the machine with msgTimer
	phase   phase     // where the machine is; see phase
	follows bool      // E9: the uncoordinated Follow policy: a candidate that never contends
	health  health    // the provider's condition as logged (E7, O4, Q2)
	due     time.Time // when the next acquisition or renewal is due (phaseCandidate unless follows, phaseLeading)
	step    *call     // the acquisition or renewal under way, if any
	pending int       // other calls under way (release, watch, deregister)
	// leave is set when msgLeave came: the process leaves; a candidate
	// makes no new attempt, a leader no renewal, and the other lock calls
	// run through the leave's gate. nil until then.
	leave *callGate

	// lease is the leader's: the current term's lease, nil when not
	// leading (phaseLeading has it; every other phase has not).
	lease locking.Lease
	// cand is the candidate's: what it waits for and what woke it; nil
	// exactly while leading (lease set), made afresh when a term ends.
	cand *candidate
	// learned is what the machine learned that outlives a term.
	learned learned
	// stopping is the Stop's: nil until the first Stop is taken.
	stopping *stopping

	link      link    // the notification link (Q1, P3); see link
	backoff   backoff // the waits that grow with failures in a row
	announced string  // the leader identity last announced (P2)
}

// candidate is what the machine knows while it does not lead: when it
// may try and what woke it. A term's end makes a fresh one.
type candidate struct {
	sitOutUntil time.Time // Resign, HandOver: no acquisition before then (E8, H4)
	wokeDuring  time.Time // a wake that came while the attempt under way ran (P3); zero if none
	named       bool      // a release named this instance, and no attempt since (B1)
	// When the role became free as this instance learned it, for the
	// handover metric (O6): "handover" from a release notification,
	// "takeover" from the expiry of the holder's lease.
	freeSince time.Time
	freeKind  string
}

// learned is what the machine learned that counts for the elector's whole
// life, across terms.
type learned struct {
	tried       bool      // an acquisition attempt has been made
	registered  time.Time // when the last attempt the lock answered (acquired or held) was sent: it registered this participant (P1)
	topPriority int       // the highest participant priority the last refusal reported (B2)
}

// stopping is the state of a Stop under way: from the first Stop taken
// (its stop request follows) until it replied and after.
type stopping struct {
	req  *request // phaseStopping: the Stop waiting for the calls under way
	errs []error  // what the release reported, for Stop's reply
	// done is closed by the first Stop once it returns; every later Stop
	// waits for it. Made with the first Stop, so an elector that is never
	// stopped, or stopped before it started, has none.
	done chan struct{}
}

// backoff is the machine's waits that grow with failures in a row: the
// acquisitions the lock never sent (unsentWait) and the refusals that
// reported the holder's lease ending within finalWait.
type backoff struct {
	unsent uint8 // acquisition attempts in a row the lock never sent (locking.ErrNotSent), at most maxUnsent
	final  int   // refusals in a row that reported at most finalWait left
}

// health is the provider's condition as the machine logged it, so each
// episode is logged once at its start and once at its end.
type health struct {
	authFailed bool // the backend refused the credentials; logged once (O4)
	outage     bool // the provider failed and has not answered since (E7)
	unacked    bool // too few replicas acknowledged and none has since (Q2)
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
	msgLeave // the process leaves (StopAll, Process.Leave): no new attempt, no renewal; Stop follows
)

// message is one unit of work for the machine.
type message struct {
	kind msgKind
	o    *outcome       // msgOutcome
	req  *request       // msgRequest; msgStop: the stop request when no successor is named (nil: none)
	ev   *locking.Event // msgEvent (a pointer keeps every message, queued by the thousand in a leave, at 48 bytes)
	life *lifeRequest   // msgStart, msgStop
	gate *callGate      // msgLeave: the leave's gate
}

// phase is where the machine is in the elector's life.
type phase uint8

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
	// way, then replies (stopping.req).
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
// from Start on: a wake of clk, its Process's clock, or a runtime timer of
// its own without one.
func newLoop(e *Elector, clk *clock, gates *processGates) *loop {
	l := &loop{e: e, cand: &candidate{}}
	l.inbox.handle = l.handle
	if gates != nil {
		l.inbox.spawn = gates.machines.spawn
	}
	// The timer runs the machine when idle, on the clock's goroutine or
	// the runtime's, one per firing, holding nothing.
	fire := func() { l.inbox.run(message{kind: msgTimer}) }
	if clk != nil {
		l.timer = clk.newWake(fire)
		return l
	}
	t := time.AfterFunc(MaxWait, fire)
	t.Stop()
	l.timer = t
	return l
}
