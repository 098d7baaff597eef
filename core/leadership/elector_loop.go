package leadership

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/locking"
)

// errLockFault marks a lock call that panicked or broke the Lock contract
// (E10), as opposed to a provider failure (E6, E7).
var errLockFault = errors.New("leadership: lock fault")

// opKind is the kind of a lock call.
type opKind int

const (
	opAcquire opKind = iota + 1
	opRenew
	opRelease
	opWatch
	opUnwatch
	opDeregister
)

func (k opKind) String() string {
	switch k {
	case opAcquire:
		return "acquire"
	case opRenew:
		return "renew"
	case opRelease:
		return "release"
	case opWatch:
		return "watch"
	case opUnwatch:
		return "unwatch"
	default:
		return "deregister"
	}
}

// call is one lock call under way on a goroutine of its own. The loop
// creates it and reads its outcome; the goroutine only runs the lock.
type call struct {
	op      opKind
	sent    time.Time
	bound   time.Duration // the call's context ends at sent+bound
	term    uint64        // opRenew: the term it renews
	lease   locking.Lease // opRenew, opRelease: the lease it works on
	cancel  context.CancelFunc
	done    func(error) // opRelease, opDeregister: run by the loop with the outcome
	ended   Reason      // opRenew: why its term ended while it was under way (0: it did not)
	overdue bool        // it overran its bound and was reported
}

// outcome is what a call reports back to the loop.
type outcome struct {
	c       *call
	err     error
	lease   locking.Lease // opAcquire: the granted lease
	granted time.Duration // opAcquire, opRenew: what the backend granted
	fence   uint64        // opAcquire: the lease's fence
	// opRenew: a higher-priority participant has been live for a lease (B2)
	preempted bool

	stopWatch func() // opWatch: ends the subscription
}

// loop is the elector's state machine. It owns the term: the lease, the
// deadlines, the call under way. It has no goroutine of its own. Work
// reaches it as messages in its inbox (call outcomes, the timer, Stop and
// Resign requests, the lock's events); the inbox runs handle for each, one
// at a time, on a goroutine that exists only while messages are queued
// (see inbox). So at most one goroutine runs the machine at any moment,
// and an idle elector costs no goroutine: it waits on a timer.
// Everything other goroutines may read is published through the
// Elector's atomic pointers.
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
	follows     bool          // E9: the uncoordinated Follow policy: a candidate that never contends
	due         time.Time     // when the next acquisition or renewal is due (phaseCandidate unless follows, phaseLeading)
	sitOutUntil time.Time     // Resign: no acquisition before then (E8)
	wokeDuring  time.Time     // a wake that came while the attempt under way ran (P3); zero if none
	tried       bool          // an acquisition attempt has been made
	authFailed  bool          // the backend refused the credentials; logged once (O4)
	outage      bool          // the provider failed and has not answered since (E7)
	stopping    bool          // the first Stop was taken; its stop request follows (phaseStopping)
	stopReq     *request      // phaseStopping: the Stop waiting for the calls under way
	stopErrs    []error

	stopWatch     func()
	watchCancel   context.CancelFunc // ends a subscription attempt (and its retry wait)
	watchFailures int                // subscription attempts failed in a row
	live          bool               // the event subscription is live (P3)
	subscriptions int                // EventSubscribed seen so far
	announced     string
	topPriority   int  // the highest participant priority the last refusal reported (B2)
	unsure        bool // a renewal of this term failed with an unknown outcome (it may still land)
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
	req  request       // msgRequest
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
	l.timer = time.AfterFunc(MaxWait, func() { l.post(message{kind: msgTimer}) })
	l.timer.Stop()
	return l
}

// post queues m for the machine. It never runs the machine on the
// caller's goroutine, so it is safe from any goroutine, also one inside the
// lock (events) or the timer.
func (l *loop) post(m message) { l.inbox.put(m) }

// handle takes one message, then does what is due and sets the timer.
func (l *loop) handle(m message) {
	switch m.kind {
	case msgStart:
		if !l.begin(m.life) {
			return
		}
	case msgStop:
		if !l.stopAsked(m.life) {
			return
		}
	}
	if l.phase == phaseIdle || l.phase == phaseStopped {
		// Before Start only a request can come (it is answered); after
		// Stop replied, what still arrives is cleaned up.
		l.afterStop(m)
		return
	}
	switch m.kind {
	case msgTimer:
	case msgOutcome:
		l.finish(m.o)
	case msgRequest:
		if l.phase == phaseStopping {
			l.afterStop(m)
		} else if m.req.stop {
			l.stop(m.req)
		} else {
			l.stepDown(m.req.ctx, m.req.target, m.req.ended, func(err error) { m.req.reply <- err })
		}
	case msgEvent:
		if l.phase != phaseStopping {
			l.event(m.ev)
		}
	}
	if l.phase == phaseStopping {
		l.finishStop()
		return
	}
	now := time.Now()
	l.advance(now)
	l.arm(now)
}

// begin takes Start: an idle machine becomes a candidate (E1), joins its
// balance group and goes on to act; otherwise Start fails. It reports
// whether handle goes on.
func (l *loop) begin(r lifeRequest) bool {
	e := l.e
	switch l.phase {
	case phaseIdle:
	case phaseStopping, phaseStopped:
		r.reply <- lifeReply{err: fmt.Errorf("leadership: start role %q: elector stopped", e.role)}
		return false
	default:
		if l.stopping {
			r.reply <- lifeReply{err: fmt.Errorf("leadership: start role %q: elector stopped", e.role)}
		} else {
			r.reply <- lifeReply{err: fmt.Errorf("leadership: start role %q: already started", e.role)}
		}
		return false
	}
	if e.capped {
		// Logged at Start, not in NewElector: a composition that refuses
		// such a lease (CheckComposition at OnStart) fails before it starts
		// the elector, and must not first warn as if it would carry on.
		e.log.Warn("LeadershipLeaseCapped",
			zap.Duration("lease", e.asked.Lease), zap.Duration("max_lease", e.opts.Lease),
			zap.Duration("renew_interval", e.opts.RenewInterval))
	}
	if !e.coordinated {
		e.log.Warn("LeadershipUncoordinated", zap.Stringer("when_uncoordinated", e.opts.WhenUncoordinated))
	}
	e.progress.Store(&loopProgress{at: time.Now()})
	l.base = context.WithoutCancel(r.ctx)
	l.phase = phaseCandidate
	e.running.Store(true)
	l.due = time.Now() // E1: the first attempt is immediate
	if !e.coordinated && e.opts.WhenUncoordinated == Follow {
		l.follows = true // E9: never leads; only Stop ends the wait
	} else {
		l.watch(0)
	}
	if e.group != nil && e.coordinated {
		// Here, before any Stop can be taken, so that Stop's leave
		// always follows.
		e.group.join(e)
	}
	r.reply <- lifeReply{}
	return true
}

// stopAsked takes Stop's first message: an idle machine is stopped at
// once; the first Stop of a started one is told to go on (it hands over
// and sends the stop request, see stop), every later one to wait for the
// first. It reports whether handle goes on.
func (l *loop) stopAsked(r lifeRequest) bool {
	switch {
	case l.phase == phaseIdle:
		l.phase = phaseStopped
		r.reply <- lifeReply{idle: true}
		return false
	case l.stopping || l.phase == phaseStopping || l.phase == phaseStopped:
		r.reply <- lifeReply{}
		return false
	}
	l.stopping = true
	l.e.running.Store(false)
	r.reply <- lifeReply{first: true}
	return true
}

// advance does what is due at now: end a term whose deadline passed (E5),
// then start the acquisition or renewal that is due.
func (l *loop) advance(now time.Time) {
	if l.lease != nil && !now.Before(l.e.state.Load().deadline) {
		l.expire(now, nil)
	}
	if l.step != nil {
		if !l.step.overdue && !now.Before(l.step.sent.Add(l.step.bound+l.grace())) {
			l.step.overdue = true
			l.e.log.Error("LeadershipLoopFaulted", zap.Stringer("op", l.step.op),
				zap.String("error", "the lock call has not returned after its context ended"),
				zap.Duration("bound", l.step.bound))
		}
		return
	}
	if !l.contends() || now.Before(l.due) {
		return
	}
	switch {
	case l.lease != nil:
		l.renew(now)
	case now.Before(l.sitOutUntil):
		l.due = l.sitOutUntil
	default:
		l.acquire(now)
	}
}

// grace is how long a lock call may overrun its context before it is
// reported as faulted: a provider may clean up after a lost reply once the
// context ended (redislock takes up to a second), which is not a fault.
func (l *loop) grace() time.Duration { return l.e.opts.RetryInterval + 2*time.Second }

// arm sets the timer to the next moment the loop must act at, and
// publishes that promise for the health check.
func (l *loop) arm(now time.Time) {
	next := l.due
	if !l.contends() {
		next = now.Add(MaxWait)
	}
	p := &loopProgress{at: now}
	if l.step != nil {
		next = now.Add(MaxWait)
		if !l.step.overdue {
			next = l.step.sent.Add(l.step.bound + l.grace())
		}
		p = &loopProgress{at: l.step.sent, wait: l.step.bound}
	}
	if l.lease != nil {
		if d := l.e.state.Load().deadline; d.Before(next) {
			next = d
		}
	}
	wait := min(max(next.Sub(now), 0), MaxWait)
	if l.step == nil {
		p.wait = wait
	}
	l.e.progress.Store(p)
	l.timer.Reset(wait)
}

// send reports a call's outcome to the machine.
func (l *loop) send(o outcome) { l.post(message{kind: msgOutcome, o: o}) }

// start runs fn on a goroutine of its own with ctx, which cancel ends,
// and reports its outcome to the loop. The lock is foreign code: a panic
// in it becomes an errLockFault error (E10), and a call that never returns
// holds only its own goroutine.
func (l *loop) start(c *call, ctx context.Context, cancel context.CancelFunc, fn func(context.Context, *outcome) error) {
	c.cancel = cancel
	if c.op == opAcquire || c.op == opRenew {
		l.step = c
	} else {
		l.pending++
	}
	tel := l.e.tel
	go func() {
		o := outcome{c: c}
		spanCtx, sp := tel.span(ctx, spanName(c.op))
		o.err = guard(c.op, func() error { return fn(spanCtx, &o) })
		endSpan(sp, classify(c.op, o.err), o.err)
		cancel()
		l.send(o)
	}()
}

// guard runs the lock call fn, turning a panic into errLockFault.
func guard(op opKind, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s panicked: %v", errLockFault, op, r)
		}
	}()
	return fn()
}

// lockErr marks errors that break the Lock contract as faults.
func lockErr(err error) error {
	if errors.Is(err, locking.ErrInvalidKey) || errors.Is(err, locking.ErrInvalidLease) {
		return fmt.Errorf("%w: %w", errLockFault, err)
	}
	return err
}

func spanName(op opKind) string {
	switch op {
	case opAcquire:
		return SpanAcquire
	case opRenew:
		return SpanRenew
	case opRelease:
		return SpanRelease
	case opWatch:
		return SpanWatch
	case opUnwatch:
		return SpanUnwatch
	default:
		return SpanDeregister
	}
}

// classify names a call's outcome as the metrics and spans do.
func classify(op opKind, err error) string {
	switch {
	case err == nil && op == opAcquire:
		return outcomeAcquired
	case err == nil:
		return outcomeOK
	case errors.Is(err, errLockFault):
		return outcomeFault
	case op == opAcquire && errors.Is(err, locking.ErrNotAcquired):
		return outcomeHeld
	case op != opAcquire && errors.Is(err, locking.ErrLeaseLost):
		return outcomeRefused
	default:
		return outcomeError
	}
}

// finish takes a call's outcome. While stopping nothing may begin a term
// or a subscription: a lease an acquisition brings goes back, a
// subscription made ends.
func (l *loop) finish(o outcome) {
	stopping := l.phase == phaseStopping
	switch o.c.op {
	case opAcquire:
		l.step = nil
		switch {
		case !stopping:
			l.acquired(o)
		case o.err == nil:
			l.release(l.stopReq.ctx, o.lease, l.collect)
		}
	case opRenew:
		l.step = nil
		if !stopping {
			l.renewed(o)
		}
	case opWatch:
		l.pending--
		if stopping {
			l.unwatch(o.stopWatch)
		} else {
			l.watching(o)
		}
	default:
		l.pending--
		if o.c.done != nil {
			o.c.done(o.err)
		}
	}
}

// acquire makes one acquisition attempt (E1, E2).
func (l *loop) acquire(now time.Time) {
	e := l.e
	l.wokeDuring = time.Time{}
	l.tried = true
	bound := min(e.opts.RetryInterval, e.opts.Lease)
	ctx, cancel := context.WithTimeout(l.base, bound)
	l.start(&call{op: opAcquire, sent: now, bound: bound}, ctx, cancel, func(ctx context.Context, o *outcome) error {
		lease, err := e.caps.tryAcquire(ctx, e.lock, e.key, e.opts.Lease, e.identity, e.opts.Priority, e.opts.RetryInterval)
		switch {
		case err == nil && lease == nil:
			return fmt.Errorf("%w: TryAcquire returned neither a lease nor an error", errLockFault)
		case err != nil:
			return lockErr(err)
		}
		o.lease = lease
		o.granted, o.fence, _, _ = leaseTerms(lease, e.opts.Lease)
		return nil
	})
}

// acquired takes the outcome of an acquisition attempt.
func (l *loop) acquired(o outcome) {
	e := l.e
	now := time.Now()
	kind := classify(opAcquire, o.err)
	e.tel.acquire(kind)
	retry := e.opts.RetryInterval
	switch kind {
	case outcomeAcquired:
		l.recovered()
		deadline := o.c.sent.Add(o.granted - e.margin)
		if !now.Before(deadline) {
			// The reply came after the lease it granted had run out: no
			// term, and the lease goes back in case the backend still
			// holds it.
			e.log.Warn("LeadershipAcquiredTooLate", zap.Duration("granted", o.granted))
			l.giveBack(o.lease)
			return
		}
		l.beginTerm(o.lease, o.fence, deadline, now)
		l.due = o.c.sent.Add(e.opts.RenewInterval)
	case outcomeHeld:
		l.recovered()
		var held *locking.HeldError
		errors.As(o.err, &held)
		if held != nil {
			l.topPriority = held.TopPriority
		}
		next := retry
		if held != nil && held.Remaining > 0 {
			l.observe(held.Owner, now.Add(held.Remaining))
			l.freeSince, l.freeKind = now.Add(held.Remaining), "takeover"
			if l.live {
				// P3: a live subscription wakes this candidate on a release;
				// otherwise the lease runs out, so sleep until then.
				next = min(held.Remaining+wakeMargin, MaxWait)
				if l.yields() {
					next += retry // B1, B2: others first
				}
			} else {
				next = min(retry, held.Remaining+wakeMargin)
			}
		}
		l.due = now.Add(next)
		if w := l.wokeDuring; !w.IsZero() && w.Before(l.due) {
			// A release came while this attempt ran: the refusal may
			// predate it, so the wake it asked for still stands (P3).
			l.due = w
			if w.Before(now) {
				l.due = now
			}
		}
		e.log.Debug("LeadershipAcquireRefused", zap.String("holder", heldOwner(held)),
			zap.Duration("holder_remaining", heldRemaining(held)), zap.Duration("next_attempt", l.due.Sub(now)))
	case outcomeFault:
		l.fault("acquire", o.err)
		l.due = now.Add(retry)
	default:
		l.unavailable("acquire", o.err)
		l.due = now.Add(retry)
	}
}

func heldRemaining(h *locking.HeldError) time.Duration {
	if h == nil {
		return 0
	}
	return h.Remaining
}

func heldOwner(h *locking.HeldError) string {
	if h == nil {
		return ""
	}
	return h.Owner
}

// renew renews the term's lease (E3). One attempt may use half the
// remaining lease, so a call that hangs (a dead connection, a dial retried
// inside the client) leaves time for another attempt (E6).
func (l *loop) renew(now time.Time) {
	e := l.e
	s := e.state.Load()
	remaining := s.deadline.Sub(now)
	bound := min(max(remaining/2, RenewRetryFloor), remaining)
	lease := l.lease
	ctx, cancel := context.WithTimeout(l.base, bound)
	l.start(&call{op: opRenew, sent: now, bound: bound, term: s.term, lease: lease}, ctx, cancel, func(ctx context.Context, o *outcome) error {
		if err := lease.Extend(ctx, e.opts.Lease); err != nil {
			return lockErr(err)
		}
		var live int
		o.granted, _, o.preempted, live = leaseTerms(lease, e.opts.Lease)
		if live > 0 {
			e.tel.participants(live) // O6, from the renewal itself
		}
		return nil
	})
}

// renewed takes the outcome of a renewal: a refusal (E4) or a passed
// deadline (E5) ends the term at once; a provider failure keeps it and
// retries sooner (E6). A renewal that succeeds after the deadline does not
// revive the term (G3).
func (l *loop) renewed(o outcome) {
	e := l.e
	c := o.c
	now := time.Now()
	kind := classify(opRenew, o.err)
	e.tel.renewal(kind, now.Sub(c.sent))
	s := e.state.Load()
	if l.lease == nil || s.term != c.term {
		// The term ended while the call was under way; when it ran out,
		// endTerm already gave the lease back.
		return
	}
	switch kind {
	case outcomeOK:
		l.recovered()
		if !now.Before(s.deadline) {
			l.giveBack(l.endTerm(Expired, nil))
			return
		}
		if d := c.sent.Add(o.granted - e.margin); d.After(s.deadline) {
			e.state.Store(&termState{leader: true, term: s.term, fence: s.fence, deadline: d, token: s.token, led: s.led})
			l.observe(e.identity, d)
		}
		l.due = c.sent.Add(e.opts.RenewInterval)
		if l.verify {
			// Q1: this renewal may have been answered before the link
			// came back; verify again.
			l.verify = false
			l.due = now
		}
		if o.preempted {
			// B2: a higher-priority participant has been live for a
			// lease: hand over cooperatively, as Resign does.
			e.log.Info("LeadershipPreempted", zap.Int("priority", e.opts.Priority))
			ctx, cancel := context.WithTimeout(l.base, min(e.opts.RetryInterval, e.opts.Lease))
			l.stepDown(ctx, "", nil, func(error) { cancel() })
		}
		return
	case outcomeRefused:
		l.recovered()
		l.endTerm(Refused, o.err)
		l.due = now
		return
	}
	l.unsure = true // the request may have reached the backend
	if !now.Before(s.deadline) {
		l.expire(now, o.err)
		return
	}
	remaining := s.deadline.Sub(now)
	wait := max(RenewRetryFloor, min(e.opts.RenewInterval, remaining/2))
	if kind == outcomeFault {
		l.fault("renew", o.err)
		wait = e.opts.RetryInterval
	} else {
		l.unavailable("renew", o.err)
	}
	if wait >= remaining {
		// No attempt at or past the deadline: wait for it (E6, E5).
		wait = remaining
	}
	if l.verify && kind != outcomeFault {
		// Q1: the link came back while this renewal (sent over the old
		// one) was under way: try again now rather than at the E6 cadence.
		l.verify = false
		wait = 0
	}
	l.due = now.Add(wait)
	e.log.Debug("LeadershipRenewRetry", zap.Duration("next_attempt", wait), zap.Duration("lease_remaining", remaining), zap.Error(o.err))
}

// beginTerm makes this instance leader with lease until deadline (E2).
func (l *loop) beginTerm(lease locking.Lease, fence uint64, deadline, now time.Time) {
	e := l.e
	old := e.state.Load()
	term := old.term + 1
	ctx, cancel := context.WithCancelCause(context.Background())
	token := &termToken{Context: ctx, cancel: cancel, e: e, term: term, fence: fence}
	e.state.Store(&termState{leader: true, term: term, fence: fence, deadline: deadline, token: token, led: make(chan struct{})})
	l.phase = phaseLeading
	// Leader() names this instance before WaitForLeadership returns;
	// observe below announces it.
	e.observed.Store(&observation{identity: e.identity, until: deadline})
	close(old.led)
	l.lease = lease
	e.tel.leader(true, fence)
	e.tel.transition(Acquired)
	if !l.freeSince.IsZero() && !now.Before(l.freeSince) {
		e.tel.leaderless(l.freeKind, now.Sub(l.freeSince))
	}
	l.freeSince = time.Time{}
	e.notes.change(Change{Role: e.role, IsLeader: true, Term: term, Fence: fence, Reason: Acquired, At: now})
	e.log.Info("LeadershipAcquired", zap.Uint64("term", term), zap.Uint64("fence", fence), zap.Time("lease_deadline", deadline))
	l.observe(e.identity, deadline)
}

// endTerm ends the current term, if any, for reason: Token is cancelled
// first, then the follower state is published and the Change queued. It
// returns the lease the term held (nil when not leading); releasing it is
// the caller's decision.
func (l *loop) endTerm(reason Reason, err error) locking.Lease {
	e := l.e
	s := e.state.Load()
	if !s.leader {
		return nil
	}
	s.token.(*termToken).cancel(endedCause(reason))
	e.state.Store(&termState{term: s.term, token: s.token, led: s.led})
	lease := l.lease
	l.lease = nil
	if l.phase == phaseLeading {
		l.phase = phaseCandidate
	}
	if l.step != nil && l.step.op == opRenew {
		l.step.ended = reason
		l.step.cancel()
	}
	if reason == Expired && lease != nil && (l.unsure || (l.step != nil && l.step.op == opRenew)) {
		// A renewal of unknown outcome was sent in this term (it timed out
		// or is still under way): it may yet land (a delayed link) and
		// extend the backend's lease by a whole lease after this term
		// ended. Give the lease back now; the release compares the token,
		// and a renewal landing after it finds nothing to extend.
		l.giveBack(lease)
		lease = nil
	}
	l.unsure, l.verify = false, false
	e.tel.leader(false, 0)
	e.tel.transition(reason)
	e.notes.change(Change{Role: e.role, IsLeader: false, Term: s.term, Fence: s.fence, Reason: reason, At: time.Now()})
	l.observe("", time.Time{})
	switch reason {
	case Released:
		e.log.Info("LeadershipReleased", zap.Uint64("term", s.term))
	case Resigned:
		e.log.Info("LeadershipResigned", zap.Uint64("term", s.term))
	default:
		e.log.Warn("LeadershipLost", zap.Stringer("reason", reason), zap.Uint64("term", s.term), zap.Error(err))
	}
	return lease
}

// expire ends a term whose deadline has passed (E5) and makes the next
// attempt due now, unless endTerm started a give-back (the give-back makes
// it due when it is done).
func (l *loop) expire(now time.Time, err error) {
	l.endTerm(Expired, err)
	if l.phase != phaseGivingBack {
		l.due = now
	}
}

// stepDown ends the term and releases its lease, then sits out one
// RetryInterval (E8): Resign, and a resign request from an operator (O1).
// ended is closed once the term has ended; reply gets the release's
// outcome (nil when there was nothing to release).
func (l *loop) stepDown(ctx context.Context, target string, ended chan struct{}, reply func(error)) {
	e := l.e
	lease := l.endTerm(Resigned, nil)
	if ended != nil {
		close(ended)
	}
	if lease == nil {
		reply(nil)
		return
	}
	l.sitOutUntil = time.Now().Add(e.opts.RetryInterval)
	l.due = l.sitOutUntil
	l.releaseTo(ctx, lease, target, func(err error) {
		l.sitOutUntil = time.Now().Add(e.opts.RetryInterval)
		l.due = l.sitOutUntil
		reply(err)
	})
}

// release gives lease up, bounded by ctx, and calls done with the outcome.
func (l *loop) release(ctx context.Context, lease locking.Lease, done func(error)) {
	l.releaseTo(ctx, lease, "", done)
}

// releaseTo is release whose notification names target as the participant
// meant to take the role (B1), when the lease can say so.
func (l *loop) releaseTo(ctx context.Context, lease locking.Lease, target string, done func(error)) {
	e := l.e
	ctx, cancel := context.WithCancel(ctx)
	l.start(&call{op: opRelease, sent: time.Now(), lease: lease, done: done}, ctx, cancel, func(ctx context.Context, _ *outcome) error {
		var err error
		if h, ok := lease.(locking.HandoverLease); ok && target != "" {
			err = h.ReleaseTo(ctx, target)
		} else {
			err = lease.Release(ctx)
		}
		if err != nil {
			e.log.Warn("LeadershipReleaseFailed", zap.Error(err))
			return fmt.Errorf("leadership: release role %q: %w", e.role, err)
		}
		return nil
	})
}

// giveBack releases a lease whose term already ended, bounded like an
// acquisition, and holds the next acquisition until the release is done,
// so that attempt does not find this instance's own stale lease. The
// outcome is only logged: the term is over either way.
func (l *loop) giveBack(lease locking.Lease) {
	if lease == nil {
		return
	}
	e := l.e
	l.phase = phaseGivingBack
	ctx, cancel := context.WithTimeout(l.base, min(e.opts.RetryInterval, e.opts.Lease))
	l.release(ctx, lease, func(err error) {
		cancel()
		if err == nil {
			e.log.Debug("LeadershipLateLeaseReleased")
		}
		if l.phase == phaseGivingBack {
			l.phase = phaseCandidate
			l.due = time.Now()
		}
	})
}

// stop ends the term, releases its lease, deregisters and ends the
// subscription (E8, E11, P1); handle then waits through finishStop for
// every call under way before it replies. A lease an acquisition under way
// still brings is released too.
func (l *loop) stop(req request) {
	e := l.e
	l.timer.Stop()
	if lease := l.endTerm(Released, nil); lease != nil {
		l.releaseTo(req.ctx, lease, req.target, l.collect)
	}
	l.phase, l.stopReq = phaseStopping, &req
	close(req.ended)
	if l.step != nil {
		l.step.cancel()
	}
	if e.caps.participants != nil && e.coordinated {
		// Deregistration only speeds up what expiry does anyway (the
		// registration lapses within two leases, P1): a failure, for
		// example during an outage, is logged and does not fail Stop, and
		// a lock that has no registry to deregister from is not an error.
		ctx, cancel := context.WithCancel(req.ctx)
		l.start(&call{op: opDeregister, sent: time.Now(), done: l.deregistered}, ctx, cancel, func(ctx context.Context, _ *outcome) error {
			return e.caps.participants.Deregister(ctx, e.key, e.identity)
		})
	}
	if l.watchCancel != nil {
		l.watchCancel()
	}
	l.unwatch(l.stopWatch)
	l.stopWatch = nil
}

// deregistered logs a failed deregistration (see stop); it never fails
// Stop.
func (l *loop) deregistered(err error) {
	if err != nil && !errors.Is(err, locking.ErrNotSupported) {
		l.e.log.Warn("LeadershipDeregisterFailed", zap.Error(err))
	}
}

// collect keeps an error for Stop's reply.
func (l *loop) collect(err error) {
	if err != nil {
		l.stopErrs = append(l.stopErrs, err)
	}
}

// finishStop replies to Stop once no call is under way.
func (l *loop) finishStop() {
	if l.step != nil || l.pending > 0 {
		return
	}
	req := l.stopReq
	l.phase, l.stopReq = phaseStopped, nil
	req.reply <- errors.Join(l.stopErrs...)
}

// afterStop takes what still arrives after Stop replied (its context ended
// first): a lease an acquisition still brings goes back, a subscription
// still made ends, a request is answered.
func (l *loop) afterStop(m message) {
	switch {
	case m.kind == msgRequest:
		close(m.req.ended)
		m.req.reply <- nil
	case m.kind == msgOutcome && m.o.c.op == opAcquire && m.o.err == nil:
		lease := m.o.lease
		ctx, cancel := context.WithTimeout(l.base, min(l.e.opts.RetryInterval, l.e.opts.Lease))
		l.release(ctx, lease, func(error) { cancel() })
	case m.kind == msgOutcome && m.o.c.op == opWatch:
		l.unwatch(m.o.stopWatch)
	}
}

// watch subscribes to the lock's events (L7, P2) on a goroutine of its
// own, after waiting delay: subscribing may be network I/O. Events reach
// the machine through post, from the lock's own delivery goroutine. A lock
// without events is polled on the candidate cadence instead (E1). A
// subscription that fails (an error, a panic, no stop function) is logged
// as a fault and tried again one RetryInterval later, until Stop.
func (l *loop) watch(delay time.Duration) {
	e := l.e
	if e.caps.events == nil {
		return
	}
	postEvent := func(ev locking.Event) { l.post(message{kind: msgEvent, ev: ev}) }
	ctx, cancel := context.WithCancel(context.Background())
	l.watchCancel = cancel
	l.start(&call{op: opWatch, sent: time.Now()}, ctx, cancel, func(ctx context.Context, o *outcome) error {
		if delay > 0 {
			t := time.NewTimer(delay)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
			}
		}
		stop, err := e.caps.events.Subscribe(e.key, postEvent)
		switch {
		case err != nil:
			return fmt.Errorf("%w: subscribe: %w", errLockFault, err)
		case stop == nil:
			return fmt.Errorf("%w: subscribe returned no stop function", errLockFault)
		}
		o.stopWatch = stop
		return nil
	})
}

// watching takes the subscription a watch call made, or schedules the
// next attempt after a failed one.
func (l *loop) watching(o outcome) {
	l.watchCancel = nil
	if o.err != nil {
		if errors.Is(o.err, context.Canceled) {
			return
		}
		// The first failure of a streak is a fault; its retries are
		// logged at Debug, like every other retry.
		l.watchFailures++
		if l.watchFailures == 1 {
			l.e.log.Error("LeadershipLoopFaulted", zap.String("op", "watch"), zap.Error(o.err))
		} else {
			l.e.log.Debug("LeadershipSubscribeRetry", zap.Int("failures", l.watchFailures), zap.Error(o.err))
		}
		l.watch(l.e.opts.RetryInterval)
		return
	}
	if l.watchFailures > 0 {
		l.e.log.Info("LeadershipSubscribed", zap.Int("failures", l.watchFailures))
		l.watchFailures = 0
	}
	l.stopWatch = o.stopWatch
}

// unwatch ends a subscription on a goroutine of its own: it is network
// I/O in the lock.
func (l *loop) unwatch(stop func()) {
	if stop == nil {
		return
	}
	l.start(&call{op: opUnwatch, sent: time.Now()}, context.Background(), func() {}, func(context.Context, *outcome) error {
		stop()
		return nil
	})
}

// event takes one notification of the lock (L7, P2, P3, O1).
func (l *loop) event(ev locking.Event) {
	e := l.e
	now := time.Now()
	switch ev.Kind {
	case locking.EventReleased:
		l.observe("", time.Time{})
		l.freeSince, l.freeKind = now, "handover"
		switch {
		case ev.Owner == "":
			l.wake(now)
		case ev.Owner == e.identity:
			l.wakeAt(now) // handed to this instance (B1): take it at once
		default:
			l.wakeAt(now.Add(e.opts.RetryInterval)) // handed to another: it goes first
		}
	case locking.EventAcquired:
		if l.lease != nil && l.supersededBy(ev) {
			l.superseded(now, ev)
		}
		if ev.Owner != e.identity {
			l.observe(ev.Owner, now.Add(e.opts.Lease))
		}
	case locking.EventResign:
		if l.lease != nil && (ev.Owner == "" || ev.Owner == e.identity) {
			e.log.Info("LeadershipResignRequested")
			ctx, cancel := context.WithTimeout(l.base, min(e.opts.RetryInterval, e.opts.Lease))
			l.stepDown(ctx, "", nil, func(error) { cancel() })
		}
	case locking.EventSubscribed:
		l.live = true
		l.subscriptions++
		if l.subscriptions > 1 && l.lease != nil {
			// The link dropped and came back: the server may have
			// restarted without its data, and an acquisition announced
			// meanwhile was lost. Verify the lease with a renewal now
			// instead of at the cadence (Q1).
			l.verifyNow(now)
		}
		if l.subscriptions == 1 && l.tried {
			// Events may have been lost before the subscription first
			// came up while this candidate had already been refused (a
			// release named to it, B1): one immediate try (P3).
			l.wake(now)
		}
		// After a reconnection a candidate keeps the RetryInterval
		// cadence it fell back to when the subscription dropped (a
		// release lost meanwhile is found by then): the server may have
		// restarted without its data, and the leader, which verifies its
		// lease at once (above), gets the first chance to take the role
		// again before a candidate takes the role it still works for (Q1).
	case locking.EventUnsubscribed:
		l.live = false
		if l.phase == phaseCandidate && l.step == nil && l.due.After(now.Add(e.opts.RetryInterval)) {
			l.due = now.Add(e.opts.RetryInterval) // back to the candidate cadence
		}
	}
}

// supersededBy reports whether ev, an acquisition announced while this
// instance leads, shows that its lease is gone (Q1). With fences on both
// sides a larger fence is a later acquisition, and a smaller or equal one
// an earlier acquisition delivered late, or this term's own announcement.
// Without them, an acquisition by another owner counts, and superseded
// gives the lease back in case the event was a late one.
func (l *loop) supersededBy(ev locking.Event) bool {
	fence := l.e.state.Load().fence
	if ev.Fence != 0 && fence != 0 {
		return ev.Fence > fence
	}
	return ev.Owner != "" && ev.Owner != l.e.identity
}

// superseded ends the term at once because another acquisition of the
// role was announced (Q1), like a refused renewal (E4), and contends
// again at once: the attempt is refused while the new holder's lease
// runs, and tells how long it runs. When the event carried no fence to
// compare it may have been an old one delivered late: the lease is then
// given back first (a compare-and-delete, a no-op when the lease is gone),
// so this instance is not refused by its own lease.
func (l *loop) superseded(now time.Time, ev locking.Event) {
	fenced := ev.Fence != 0 && l.e.state.Load().fence != 0
	err := fmt.Errorf("%w: %q acquired the role (fence %d)", locking.ErrLeaseLost, ev.Owner, ev.Fence)
	lease := l.endTerm(Refused, err)
	if fenced || lease == nil {
		l.due = now
		return
	}
	l.giveBack(lease)
}

// verifyNow renews the leader's lease at once, or right after the renewal
// under way returns (Q1).
func (l *loop) verifyNow(now time.Time) {
	if l.step != nil {
		l.verify = l.step.op == opRenew
		return
	}
	l.due = now
}

// wake makes an idle candidate try at once, or after one RetryInterval
// when it lets others go first (B1, B2).
func (l *loop) wake(now time.Time) {
	if l.yields() {
		now = now.Add(l.e.opts.RetryInterval)
	}
	l.wakeAt(now)
}

// wakeAt makes an idle candidate try at at, unless it is due sooner.
func (l *loop) wakeAt(at time.Time) {
	if l.lease == nil && l.step != nil && l.step.op == opAcquire {
		// The attempt under way may be refused by the holder that just
		// left: acquired keeps this wake for the next attempt.
		if l.wokeDuring.IsZero() || at.Before(l.wokeDuring) {
			l.wokeDuring = at
		}
		return
	}
	if l.phase != phaseCandidate || l.follows || l.step != nil {
		return
	}
	if l.due.After(at) {
		l.due = at
	}
}

// yields reports whether this candidate lets others take a free role
// first, for one RetryInterval: its balance group leads its share (B1), or
// a live participant has a higher priority (B2).
func (l *loop) yields() bool {
	return l.topPriority > l.e.opts.Priority || l.e.heldBack()
}

// observe records who leads until when, as this instance learned it (P2),
// and announces a new identity to OnNewLeader subscribers and in the log:
// every instance, leader or follower, logs LeadershipNewLeader at Info when
// the leader it observes changes, as client-go's "new leader" line (the
// fence only where it is known, on the leader itself).
func (l *loop) observe(identity string, until time.Time) {
	e := l.e
	if cur := e.observed.Load(); cur.identity != identity || !cur.until.Equal(until) {
		e.observed.Store(&observation{identity: identity, until: until})
	}
	if identity != "" && identity != l.announced {
		fields := []zap.Field{zap.String("leader", identity), zap.Bool("self", identity == e.identity)}
		if l.announced != "" {
			fields = append(fields, zap.String("previous", l.announced))
		}
		if s := e.state.Load(); identity == e.identity && s.leader {
			fields = append(fields, zap.Uint64("term", s.term), zap.Uint64("fence", s.fence))
		}
		l.announced = identity
		e.log.Info("LeadershipNewLeader", fields...)
		e.notes.leader(identity)
	}
}

// unavailable logs a provider failure: at Warn once per outage, at Debug
// for every retry (E7).
func (l *loop) unavailable(op string, err error) {
	if errors.Is(err, locking.ErrUnauthorized) && !l.authFailed {
		// A configuration error, not an outage (O4): once at Error, then
		// retried quietly (below) in case the credentials are fixed.
		l.authFailed, l.outage = true, true
		l.e.log.Error("LeadershipProviderAuthFailed", zap.String("op", op), zap.Error(err),
			zap.String("advice", "check locking.redis.username and locking.redis.password (and the user's ACL)"))
		return
	}
	if !l.outage {
		l.outage = true
		l.e.log.Warn("LeadershipProviderUnavailable", zap.String("op", op), zap.Error(err))
		return
	}
	l.e.log.Debug("LeadershipProviderRetry", zap.String("op", op), zap.Error(err))
}

// fault logs a lock fault (E10) at Error, once per faulted call.
func (l *loop) fault(op string, err error) {
	l.e.log.Error("LeadershipLoopFaulted", zap.String("op", op), zap.Error(err))
}

// recovered logs the end of an outage once, at Info (E7).
func (l *loop) recovered() {
	l.authFailed = false
	if l.outage {
		l.outage = false
		l.e.log.Info("LeadershipProviderRecovered")
	}
}
