package leadership

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/locking"
)

// begin takes Start: an idle machine becomes a candidate (E1), joins its
// balance group and goes on to act; otherwise Start fails. It reports
// whether handle goes on.
func (l *loop) begin(r *lifeRequest) bool {
	e := l.e
	switch l.phase {
	case phaseIdle:
	case phaseStopping, phaseStopped:
		r.reply <- lifeReply{err: fmt.Errorf("leadership: start role %q: elector stopped", e.role)}
		return false
	default:
		if l.stopping != nil {
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
			zap.Duration("lease", e.askedLease), zap.Duration("max_lease", e.opts.Lease),
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
func (l *loop) stopAsked(r *lifeRequest) bool {
	switch {
	case l.phase == phaseIdle:
		l.phase = phaseStopped
		r.reply <- lifeReply{idle: true}
		return false
	case l.stopping == nil && l.phase == phaseStopped:
		// Stopped before it started: nothing to wait for.
		r.reply <- lifeReply{idle: true}
		return false
	case l.stopping != nil:
		r.reply <- lifeReply{done: l.stopping.done}
		return false
	}
	l.stopping = &stopping{done: make(chan struct{})}
	l.e.running.Store(false)
	r.reply <- lifeReply{first: true, done: l.stopping.done}
	return true
}

// stop ends the term, releases its lease, deregisters and ends the
// subscription (E8, E11, P1); handle then waits through finishStop for
// every call under way before it replies. A lease an acquisition under way
// still brings is released too, withdrawing the registration the attempt
// made; a refusal it brings is followed by another deregistration (see
// withdrawAgain).
func (l *loop) stop(req *request) {
	l.timer.Stop()
	lease := l.endTerm(Released, nil)
	l.phase, l.stopping.req = phaseStopping, req
	close(req.ended)
	if l.step != nil {
		l.step.cancel()
	}
	if l.link.cancel != nil {
		l.link.cancel()
	}
	l.unwatch(l.link.stop)
	l.link.stop = nil
	l.link.ended()
	if lease == nil {
		if l.step == nil && l.e.regs.withdrawnForGood() {
			// Withdrawn by its process's leave after its last attempt
			// came back, and none began since: nothing to deregister (a
			// 50,000-role leave sends 33,000 calls fewer).
			return
		}
		l.deregisterFor(req)
		return
	}
	// The release is started last, so the scheduler runs its goroutine
	// first, and alone.
	l.releaseAndWithdraw(req, lease, req.target)
}

// releaseAndWithdraw releases lease for the Stop req, naming target, and
// withdraws this participant from the role's participants in the same
// step where the lease can (H2): a balancing process elsewhere that reads
// them once it took the role must not count this instance, which takes no
// role any more. Otherwise the deregistration follows the release's reply
// (Stop waits for both), so the successor, woken by the release, waits
// for nothing else this instance sends. Errors go to Stop's reply.
func (l *loop) releaseAndWithdraw(req *request, lease locking.Lease, target string) {
	var withdrawn bool
	var w *bool
	if l.e.registered() {
		w = &withdrawn
	}
	l.releaseTo(req.ctx, lease, target, w, func(err error) {
		l.collect(err)
		if !withdrawn {
			l.deregisterFor(req)
		}
	})
}

// deregisterFor deregisters this participant for the Stop req.
// Deregistration only speeds up what expiry does anyway (the registration
// lapses within two leases, P1): a failure, for example during an outage,
// is logged and does not fail Stop, and a lock that has no registry to
// deregister from is not an error.
func (l *loop) deregisterFor(req *request) {
	ctx, cancel := context.WithCancel(req.ctx)
	l.deregister(ctx, cancel)
}

// deregister withdraws this participant from its role's participants
// (P1), bounded by ctx, which cancel ends; a failure is only logged (see
// deregistered). It does nothing when the elector does not register.
func (l *loop) deregister(ctx context.Context, cancel context.CancelFunc) {
	e := l.e
	if !e.registered() {
		cancel()
		return
	}
	l.start(&call{op: opDeregister, sent: time.Now(), done: l.deregistered}, ctx, cancel, func(ctx context.Context, _ *outcome) error {
		return e.caps.participants.Deregister(ctx, e.key, e.identity)
	})
}

// withdrawAgain deregisters this participant once more after an
// acquisition attempt that may have registered it (P1) came back while
// its process leaves (StopAll) or its Stop runs. The deregistration sent
// before may have reached the backend first (redislock pipelines
// deregistrations apart from acquisitions), and a balancing process
// elsewhere would count this instance and hand it roles it no longer
// takes; this one is sent after the attempt's reply. An attempt the lock
// never sent (locking.ErrNotSent) registered nothing.
func (l *loop) withdrawAgain(ctx context.Context, o outcome) {
	if o.err == nil || errors.Is(o.err, locking.ErrNotSent) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, min(l.e.opts.RetryInterval, l.e.opts.Lease))
	l.deregister(ctx, cancel)
}

// deregistered logs a failed deregistration (see stop); it never fails
// Stop.
func (l *loop) deregistered(err error) {
	if deregisterFailed(err) {
		l.e.log.Warn("LeadershipDeregisterFailed", zap.Error(err))
	}
}

// registered reports whether the elector registers as a participant of
// its role (P1), so that Stop, and StopAll's withdrawal, deregister it.
func (e *Elector) registered() bool {
	return e.caps.participants != nil && e.coordinated
}

// deregisterFailed reports whether a deregistration's error is worth a
// log line: a lock that has no registry to deregister from is not.
func deregisterFailed(err error) bool {
	return err != nil && !errors.Is(err, locking.ErrNotSupported)
}

// collect keeps an error for Stop's reply.
func (l *loop) collect(err error) {
	if err != nil {
		l.stopping.errs = append(l.stopping.errs, err)
	}
}

// finishStop replies to Stop once no call is under way.
func (l *loop) finishStop() {
	if l.step != nil || l.pending > 0 {
		return
	}
	req := l.stopping.req
	l.phase, l.stopping.req = phaseStopped, nil
	req.reply <- errors.Join(l.stopping.errs...)
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
