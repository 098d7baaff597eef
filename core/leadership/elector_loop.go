package leadership

import (
	"time"

	"go.uber.org/zap"
)

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
	case msgLeave:
		if l.leave == nil {
			l.leave = m.gate
		}
	}
	switch l.phase {
	case phaseIdle, phaseStopped:
		// Before Start only a request can come (it is answered); after
		// Stop replied, what still arrives is cleaned up.
		l.afterStop(m)
		return
	case phaseStopping:
		l.whileStopping(m)
	default:
		l.contending(m)
	}
	if l.phase == phaseStopping {
		l.finishStop()
		return
	}
	now := time.Now()
	l.advance(now)
	l.arm(now)
}

// contending takes a message while the machine contends or leads
// (phaseCandidate, phaseLeading, phaseGivingBack).
func (l *loop) contending(m message) {
	switch m.kind {
	case msgStop:
		if m.req != nil {
			l.stop(m.req) // the first Stop's request came with it
		}
	case msgOutcome:
		l.finish(*m.o)
	case msgRequest:
		if m.req.stop {
			l.stop(m.req)
		} else {
			l.stepDown(m.req.ctx, m.req.target, m.req.ended, func(err error) { m.req.reply <- err })
		}
	case msgEvent:
		l.event(*m.ev)
	}
}

// whileStopping takes a message while Stop waits for the calls under way
// (phaseStopping): outcomes are wound up (see finishStopping), a request
// is answered, events and the timer are dropped.
func (l *loop) whileStopping(m message) {
	switch m.kind {
	case msgOutcome:
		l.finishStopping(*m.o)
	case msgRequest:
		l.afterStop(m)
	}
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
	case l.lease != nil && l.leave != nil:
		// StopAll: this process is leaving and its Stop follows. A
		// renewal would register it as a participant again (P1); without
		// one the term ends at its deadline at the latest (E5).
		l.due = l.e.state.Load().deadline
	case l.lease != nil:
		l.renew(now)
	case now.Before(l.cand.sitOutUntil):
		l.due = l.cand.sitOutUntil
	case l.deferForLink(now):
		// Q1: the subscription is down; the due time is moved.
	case l.leave != nil && !l.cand.named:
		// StopAll: this process is leaving; an attempt would register it
		// as a participant again and could win a role only to release it.
		// A role handed to it by name is taken all the same: the others
		// wait a RetryInterval for it, and StopAll's second wave hands it
		// on at once.
		l.due = now.Add(MaxWait)
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
