package leadership

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/locking"
)

// acquire makes one acquisition attempt (E1, E2).
func (l *loop) acquire(now time.Time) {
	e := l.e
	l.cand.wokeDuring, l.cand.named = time.Time{}, false
	l.learned.tried = true
	l.startBounded(&call{op: opAcquire, sent: now, bound: min(e.opts.RetryInterval, e.opts.Lease)}, func(ctx context.Context, o *outcome) error {
		lease, err := e.caps.tryAcquire(ctx, e.lock, e.key, e.opts.Lease, e.identity, e.opts.Priority, e.opts.RetryInterval)
		return o.takeLease(lease, err, e.opts.Lease)
	})
}

// takeLease records an acquisition's reply in o: the lease and its terms,
// or the error. It is kept out of the frame of the call's function, which
// is on the stack while the lock call blocks (see loop.run).
//
//go:noinline
func (o *outcome) takeLease(lease locking.Lease, err error, asked time.Duration) error {
	switch {
	case err == nil && lease == nil:
		return fmt.Errorf("%w: TryAcquire returned neither a lease nor an error", errLockFault)
	case err != nil:
		return lockErr(err)
	}
	o.lease = lease
	o.granted, o.fence, _, _ = leaseTerms(lease, asked)
	return nil
}

// acquired takes the outcome of an acquisition attempt.
func (l *loop) acquired(o outcome) {
	e := l.e
	now := time.Now()
	kind := classify(opAcquire, o.err)
	e.tel.acquire(kind)
	retry := e.opts.RetryInterval
	notSent := kind == outcomeError && errors.Is(o.err, locking.ErrNotSent)
	if !notSent {
		l.backoff.unsent = 0
	}
	if kind == outcomeAcquired || kind == outcomeHeld {
		l.learned.registered = o.c.sent // the lock answered: it registered this participant (P1)
	}
	switch kind {
	case outcomeAcquired:
		l.recovered()
		l.acknowledged()
		l.backoff.final = 0
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
			l.learned.topPriority = held.TopPriority
		}
		next := retry
		final := false
		if held != nil && held.Remaining > 0 {
			l.observe(held.Owner, now.Add(held.Remaining))
			l.cand.freeSince, l.cand.freeKind = now.Add(held.Remaining), "takeover"
			wait := held.Remaining
			if wait <= finalWait {
				// The lease ends within the millisecond: try again at once
				// rather than after the timer's slack, a bounded number of
				// times in a row.
				l.backoff.final++
				final = true
				wait = 0
				if l.backoff.final > maxFinalTries {
					wait = held.Remaining + finalWait
				}
			}
			if l.link.live.Load() {
				// P3: a live subscription wakes this candidate on a release;
				// otherwise the lease runs out, so sleep until then.
				next = min(wait, MaxWait)
				if l.yields() {
					next += retry // B1, B2: others first
				}
			} else {
				next = min(retry, wait)
			}
		}
		if !final {
			l.backoff.final = 0
		}
		l.due = now.Add(next)
		if w := l.cand.wokeDuring; !w.IsZero() && w.Before(l.due) {
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
	case outcomeUnacked:
		l.unacknowledged("acquire", o.err)
		l.due = now.Add(retry)
	default:
		l.unavailable("acquire", o.err)
		if notSent {
			l.due = now.Add(l.backoff.unsentWait(retry, e.opts.Lease))
			return
		}
		// E1, E7: the cadence counts from when the attempt was sent, so
		// an attempt that used its whole bound (a server that accepts
		// connections but does not answer in time, as one does while it
		// recovers) is followed at once by the next, not one more
		// RetryInterval later.
		l.due = o.c.sent.Add(retry)
		if l.due.Before(now) {
			l.due = now
		}
	}
}

// unsentWait is the wait after an acquisition attempt the lock never sent
// because its client's queue held it past its bound: the process has more
// calls due than its connections carry. Trying again at once (as after a
// server that did not answer) would put the attempt back at the end of the
// same queue, and a saturated process would stay saturated: every
// candidate's attempt would time out in the queue and be made again, at
// about one per bound instead of one per holder's lease. So the wait is
// one RetryInterval after the first such attempt and doubles with each
// one in a row, up to one Lease; any attempt that reaches the server ends
// the streak. The candidates of other processes, which are not saturated,
// still take a role whose leader is gone within the lease (E1).
func (b *backoff) unsentWait(retry, lease time.Duration) time.Duration {
	b.unsent = min(b.unsent+1, maxUnsent)
	wait := retry
	for i := uint8(1); i < b.unsent && wait < lease; i++ {
		wait *= 2
	}
	return min(wait, lease)
}

// maxUnsent bounds the count of unsent attempts in a row: past it the
// wait has long reached the Lease.
const maxUnsent = 64

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
	l.startBounded(&call{op: opRenew, sent: now, bound: bound, term: s.term, lease: lease}, func(ctx context.Context, o *outcome) error {
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
	if kind == outcomeUnacked {
		l.unacknowledged("renew", o.err)
	}
	s := e.state.Load()
	if l.lease == nil || s.term != c.term {
		// The term ended while the call was under way; when it ran out,
		// endTerm already gave the lease back.
		return
	}
	switch kind {
	case outcomeOK:
		l.recovered()
		l.acknowledged()
		if !now.Before(s.deadline) {
			l.giveBack(l.endTerm(Expired, nil))
			return
		}
		if d := c.sent.Add(o.granted - e.margin); d.After(s.deadline) {
			e.publish(func(s *termState) *termState {
				return &termState{leader: true, term: s.term, fence: s.fence, deadline: d, token: s.token, led: s.led}
			})
			l.observe(e.identity, d)
		}
		l.due = c.sent.Add(e.opts.RenewInterval)
		if l.link.reverify() {
			// Q1: this renewal may have been answered before the link
			// came back; verify again.
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
	l.link.unsure = true // the request may have reached the backend
	if !now.Before(s.deadline) {
		l.expire(now, o.err)
		return
	}
	remaining := s.deadline.Sub(now)
	wait := max(RenewRetryFloor, min(e.opts.RenewInterval, remaining/2))
	switch kind {
	case outcomeFault:
		l.fault("renew", o.err)
		wait = e.opts.RetryInterval
	case outcomeUnacked:
		// logged and counted above
	default:
		l.unavailable("renew", o.err)
	}
	if wait >= remaining {
		// No attempt at or past the deadline: wait for it (E6, E5).
		wait = remaining
	}
	if kind != outcomeFault && l.link.reverify() {
		// Q1: the link came back while this renewal (sent over the old
		// one) was under way: try again now rather than at the E6 cadence.
		wait = 0
	}
	l.due = now.Add(wait)
	e.log.Debug("LeadershipRenewRetry", zap.Duration("next_attempt", wait), zap.Duration("lease_remaining", remaining), zap.Error(o.err))
}

// beginTerm makes this instance leader with lease until deadline (E2).
func (l *loop) beginTerm(lease locking.Lease, fence uint64, deadline, now time.Time) {
	e := l.e
	term := e.state.Load().term + 1
	ctx, cancel := context.WithCancelCause(context.Background())
	token := &termToken{Context: ctx, cancel: cancel, e: e, term: term, fence: fence}
	old := e.state.Swap(&termState{leader: true, term: term, fence: fence, deadline: deadline, token: token})
	l.phase = phaseLeading
	// Leader() names this instance before WaitForLeadership returns;
	// observe below announces it.
	e.observed.Store(&observation{identity: e.identity, until: deadline})
	if old.led != nil {
		close(old.led)
	}
	l.lease = lease
	if e.group != nil && e.coordinated {
		e.group.leading.Add(1) // B1: counted until endTerm
	}
	e.tel.leader(true, fence)
	e.tel.transition(Acquired)
	if !l.cand.freeSince.IsZero() && !now.Before(l.cand.freeSince) {
		e.tel.leaderless(l.cand.freeKind, now.Sub(l.cand.freeSince))
	}
	l.cand = nil // the candidate's state ends with its candidacy
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
	e.publish(func(s *termState) *termState { return &termState{term: s.term, token: s.token, led: s.led} })
	lease := l.lease
	l.lease, l.cand = nil, &candidate{}
	if e.group != nil && e.coordinated {
		e.group.leading.Add(-1)
	}
	if l.phase == phaseLeading {
		l.phase = phaseCandidate
	}
	if l.step != nil && l.step.op == opRenew {
		l.step.ended = reason
		l.step.cancel()
	}
	if reason == Expired && lease != nil && (l.link.unsure || (l.step != nil && l.step.op == opRenew)) {
		// A renewal of unknown outcome was sent in this term (it timed out
		// or is still under way): it may yet land (a delayed link) and
		// extend the backend's lease by a whole lease after this term
		// ended. Give the lease back now; the release compares the token,
		// and a renewal landing after it finds nothing to extend.
		l.giveBack(lease)
		lease = nil
	}
	l.link.termEnded()
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
// Handing over to target (H4, B1), it sits out two: the others' hold-back
// for the successor, then one as after Resign.
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
	sitOut := e.opts.RetryInterval
	if target != "" {
		// H4: the other candidates hold back one RetryInterval for the
		// named successor, so their first chance begins only then; a
		// sit-out ending at the same moment let this instance take the
		// role back, should the successor not take it, as often as not.
		sitOut *= 2
	}
	l.cand.sitOutUntil = time.Now().Add(sitOut)
	l.due = l.cand.sitOutUntil
	l.releaseTo(ctx, lease, target, nil, func(err error) {
		if l.cand != nil { // not leading again already (a release that outlasted the sit-out)
			l.cand.sitOutUntil = time.Now().Add(sitOut)
			l.due = l.cand.sitOutUntil
		}
		reply(err)
	})
}

// release gives lease up, bounded by ctx, and calls done with the outcome.
func (l *loop) release(ctx context.Context, lease locking.Lease, done func(error)) {
	l.releaseTo(ctx, lease, "", nil, done)
}

// releaseTo is release whose notification names target as the participant
// meant to take the role (B1), when the lease can say so. With withdrawn
// set (a Stop), the release also withdraws this participant from the
// role's participants when the lease can do both in one step, and
// *withdrawn reports whether it did once done runs.
func (l *loop) releaseTo(ctx context.Context, lease locking.Lease, target string, withdrawn *bool, done func(error)) {
	e := l.e
	ctx, cancel := context.WithCancel(ctx)
	// The notifications queued so far (the ended term's OnChange(false),
	// a new leader's identity) reach their subscribers before the lease
	// goes back, so no subscriber sees the successor lead before this
	// instance's loss (E8, E11). A subscriber that does not return holds
	// the release back for a RetryInterval at most, or until ctx ends.
	delivered := e.notes.idle()
	l.start(&call{op: opRelease, sent: time.Now(), lease: lease, done: done}, ctx, cancel, func(ctx context.Context, _ *outcome) error {
		select {
		case <-delivered:
		default:
			t := time.NewTimer(e.opts.RetryInterval)
			select {
			case <-delivered:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
		var err error
		if r, ok := lease.(locking.ReleasingLease); ok {
			// A handover keeps the role for its successor as long as the
			// other candidates hold back, where the lock can (B1, H4).
			var w bool
			w, err = r.ReleaseWith(ctx, locking.ReleaseOptions{Target: target, Hold: e.opts.RetryInterval, Withdraw: withdrawn != nil})
			if withdrawn != nil {
				*withdrawn = w
			}
		} else if w, ok := lease.(locking.WithdrawingLease); ok && withdrawn != nil {
			*withdrawn, err = w.ReleaseWithdraw(ctx, target)
		} else if h, ok := lease.(locking.HandoverLease); ok && target != "" {
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
