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

// loopState is what the loop goroutine alone reads and writes.
type loopState struct {
	epoch     uint64    // epoch of the term the loop renews
	nextRenew time.Time // leader: when the next renewal is due
	outage    bool      // the provider failed and has not answered since (E7)
}

// run is the election loop: one per elector, from Start to Stop. It never
// ends on its own (E10): a panic in a step is logged, backed off one
// RetryInterval and survived.
func (e *Elector) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	var released <-chan struct{}
	var stopWatch func()
	onCallStack(func() { released, stopWatch = e.watch() })
	defer onCallStack(stopWatch)
	var st loopState
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for ctx.Err() == nil {
		var wait time.Duration
		onCallStack(func() { wait = e.step(ctx, &st) })
		if ctx.Err() != nil {
			return
		}
		if wait <= 0 {
			continue
		}
		e.setProgress(time.Now(), wait)
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.wake:
		case <-released:
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
	}
}

// watch subscribes to release notifications when the lock offers them
// (L7). A panicking Watch counts as no notification.
func (e *Elector) watch() (ch <-chan struct{}, stop func()) {
	w, ok := e.lock.(locking.Watcher)
	if !ok || !e.coordinated {
		return nil, func() {}
	}
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("LeadershipLoopFaulted", zap.String("op", "watch"), zap.Any("panic", r))
			ch, stop = nil, func() {}
		}
	}()
	ch, stop = w.Watch(e.key)
	if stop == nil {
		stop = func() {}
	}
	return ch, stop
}

// step makes at most one lock call and returns how long to wait before the
// next step (0: at once).
func (e *Elector) step(ctx context.Context, st *loopState) (wait time.Duration) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("LeadershipLoopFaulted", zap.String("op", "loop"), zap.Any("panic", r))
			wait = e.opts.RetryInterval
		}
	}()
	if !e.coordinated && e.opts.WhenUncoordinated == Follow {
		return MaxWait // E9: never leads; only Stop ends the wait
	}
	now := time.Now()
	e.mu.Lock()
	s := e.state.Load()
	leading := s.leader && e.epoch == st.epoch
	sitOut := e.sitOutUntil
	e.mu.Unlock()
	if leading {
		return e.renew(ctx, st)
	}
	if now.Before(sitOut) {
		return sitOut.Sub(now)
	}
	return e.acquire(ctx, st)
}

// opContext derives the context of one lock call, bounded by deadline and
// cancellable by Resign, Stop and the expiry timer. It returns the epoch
// the call belongs to.
//
// The call's context keeps the loop context's values but is not its
// child: Stop cancels the loop context and the in-flight call under e.mu,
// and opContext cancels a call begun after that itself, so the loop
// context never registers (and keeps the map of) child contexts.
func (e *Elector) opContext(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc, uint64) {
	opCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	e.mu.Lock()
	e.opCancel = cancel
	epoch := e.epoch
	if ctx.Err() != nil {
		cancel() // Stop began before this call
	}
	e.mu.Unlock()
	return opCtx, cancel, epoch
}

// acquire makes one acquisition attempt (E1, E2) and returns the wait
// before the next step.
func (e *Elector) acquire(ctx context.Context, st *loopState) time.Duration {
	retry := e.opts.RetryInterval
	bound := min(retry, e.opts.Lease)
	sent := time.Now()
	opCtx, cancel, epoch := e.opContext(ctx, sent.Add(bound))
	e.setProgress(sent, bound)
	spCtx, sp := e.tel.span(opCtx, SpanAcquire)
	l, err := e.tryAcquire(spCtx)
	cancel()

	var held *locking.HeldError
	switch {
	case err == nil:
		endSpan(sp, outcomeAcquired, nil)
		e.tel.acquire(outcomeAcquired)
		e.recovered(st)
		return e.acquired(l, sent, epoch, st)
	case errors.As(err, &held), errors.Is(err, locking.ErrNotAcquired):
		endSpan(sp, outcomeHeld, err)
		e.tel.acquire(outcomeHeld)
		e.recovered(st)
		next := retry
		if held != nil && held.Remaining > 0 {
			next = min(retry, held.Remaining+wakeMargin)
		}
		e.log.Debug("LeadershipAcquireRefused", zap.Duration("holder_remaining", heldRemaining(held)), zap.Duration("next_attempt", next))
		e.clearOp(epoch)
		return next
	case ctx.Err() != nil:
		endSpan(sp, outcomeError, err)
		return 0 // stopping
	case errors.Is(err, errLockFault):
		endSpan(sp, outcomeFault, err)
		e.tel.acquire(outcomeFault)
		e.log.Error("LeadershipLoopFaulted", zap.String("op", "acquire"), zap.Error(err))
		e.clearOp(epoch)
		return retry
	default:
		endSpan(sp, outcomeError, err)
		e.tel.acquire(outcomeError)
		e.unavailable(st, "acquire", err)
		e.clearOp(epoch)
		return retry
	}
}

func heldRemaining(h *locking.HeldError) time.Duration {
	if h == nil {
		return 0
	}
	return h.Remaining
}

// clearOp forgets the in-flight call's cancel function when it is still
// the call of epoch.
func (e *Elector) clearOp(epoch uint64) {
	e.mu.Lock()
	if e.epoch == epoch {
		e.opCancel = nil
	}
	e.mu.Unlock()
}

// acquired turns a granted lease into a term, unless the acquisition is
// stale (Stop began meanwhile) or its lease already ran out.
func (e *Elector) acquired(l locking.Lease, sent time.Time, epoch uint64, st *loopState) time.Duration {
	deadline := sent.Add(e.granted(l))
	e.mu.Lock()
	e.opCancel = nil
	if e.phase != phaseRunning || e.epoch != epoch {
		if e.phase == phaseStopping {
			e.orphan = l // Stop releases it after the loop ends
		}
		e.mu.Unlock()
		return 0
	}
	if !time.Now().Before(deadline) {
		e.mu.Unlock()
		// The reply came after the lease it granted had run out: no term,
		// and the lease goes back in case the backend still holds it.
		e.log.Warn("LeadershipAcquiredTooLate", zap.Duration("granted", e.granted(l)))
		e.giveBack(context.Background(), l)
		return 0
	}
	term := e.beginTerm(l, deadline)
	st.epoch = e.epoch
	e.mu.Unlock()
	st.nextRenew = sent.Add(e.opts.RenewInterval)
	e.log.Info("LeadershipAcquired", zap.Uint64("term", term), zap.Time("lease_deadline", deadline))
	return time.Until(st.nextRenew)
}

// granted is the lease the backend granted l: GrantedLease.Granted when
// the lock reports it, else the requested lease (already capped).
func (e *Elector) granted(l locking.Lease) (d time.Duration) {
	d = e.opts.Lease
	if g, ok := l.(locking.GrantedLease); ok {
		func() {
			defer func() { _ = recover() }()
			if v := g.Granted(); v > 0 {
				d = v
			}
		}()
	}
	return d
}

// renew renews the term's lease when due (E3) and handles the outcome: a
// refusal (E4) or a passed deadline (E5) ends the term at once; a provider
// failure keeps it and retries sooner (E6).
func (e *Elector) renew(ctx context.Context, st *loopState) time.Duration {
	now := time.Now()
	e.mu.Lock()
	s := e.state.Load()
	l := e.lease
	if !s.leader || e.epoch != st.epoch || l == nil {
		e.mu.Unlock()
		return 0 // the term ended meanwhile
	}
	if !now.Before(s.deadline) {
		_, term := e.endTerm(Expired)
		e.mu.Unlock()
		e.log.Warn("LeadershipLost", zap.Stringer("reason", Expired), zap.Uint64("term", term))
		return 0
	}
	e.mu.Unlock()
	if now.Before(st.nextRenew) {
		return st.nextRenew.Sub(now)
	}

	// One attempt may use half the remaining lease, so a call that hangs
	// (a dead connection, a dial retried inside the client) leaves time
	// for another attempt (E6); never more than the lease itself.
	sent := time.Now()
	bound := min(max(s.deadline.Sub(sent)/2, RenewRetryFloor), s.deadline.Sub(sent))
	opCtx, cancel, epoch := e.opContext(ctx, sent.Add(bound))
	if epoch != st.epoch {
		cancel() // the term ended since the check above
		return 0
	}
	e.setProgress(sent, bound)
	spCtx, sp := e.tel.span(opCtx, SpanRenew)
	err := e.extend(spCtx, l)
	cancel()
	took := time.Since(sent)

	outcome := outcomeOK
	switch {
	case err == nil:
	case errors.Is(err, locking.ErrLeaseLost):
		outcome = outcomeRefused
	case errors.Is(err, errLockFault):
		outcome = outcomeFault
	default:
		outcome = outcomeError
	}
	endSpan(sp, outcome, err)
	if ctx.Err() != nil {
		return 0
	}
	e.tel.renewal(outcome, took)

	e.mu.Lock()
	e.opCancel = nil
	if e.epoch != epoch {
		running := e.phase == phaseRunning
		e.mu.Unlock()
		if outcome == outcomeOK && running {
			// The term ended (expiry, Resign) while the extension was in
			// flight, and the backend extended it after all: give the
			// lease back so nobody waits a whole lease for it.
			e.giveBack(ctx, l)
		}
		return 0
	}
	switch outcome {
	case outcomeOK:
		deadline := sent.Add(e.granted(l))
		if deadline.After(s.deadline) {
			e.state.Store(&termState{leader: true, term: s.term, token: s.token, deadline: deadline})
			e.expiry.Reset(time.Until(deadline))
		}
		e.mu.Unlock()
		e.recovered(st)
		st.nextRenew = sent.Add(e.opts.RenewInterval)
		return time.Until(st.nextRenew)
	case outcomeRefused:
		_, term := e.endTerm(Refused)
		e.mu.Unlock()
		e.recovered(st)
		e.log.Warn("LeadershipLost", zap.Stringer("reason", Refused), zap.Uint64("term", term), zap.Error(err))
		return 0
	}
	now = time.Now()
	if !now.Before(s.deadline) {
		_, term := e.endTerm(Expired)
		e.mu.Unlock()
		e.log.Warn("LeadershipLost", zap.Stringer("reason", Expired), zap.Uint64("term", term), zap.Error(err))
		return 0
	}
	e.mu.Unlock()
	remaining := s.deadline.Sub(now)
	wait := max(RenewRetryFloor, min(e.opts.RenewInterval, remaining/2))
	if outcome == outcomeFault {
		e.log.Error("LeadershipLoopFaulted", zap.String("op", "renew"), zap.Error(err))
		wait = e.opts.RetryInterval
	} else {
		e.unavailable(st, "renew", err)
	}
	if wait >= remaining {
		// No attempt at or past the deadline: wait for it (E6, E5).
		st.nextRenew = s.deadline
		wait = remaining
	} else {
		st.nextRenew = now.Add(wait)
	}
	e.log.Debug("LeadershipRenewRetry", zap.Duration("next_attempt", wait), zap.Duration("lease_remaining", remaining), zap.Error(err))
	return wait
}

// giveBack releases a lease whose term already ended, bounded like an
// acquisition. The outcome is only logged: the term is over either way.
func (e *Elector) giveBack(ctx context.Context, l locking.Lease) {
	ctx, cancel := context.WithTimeout(ctx, min(e.opts.RetryInterval, e.opts.Lease))
	defer cancel()
	if err := e.release(ctx, l); err == nil {
		e.log.Debug("LeadershipLateExtensionReleased")
	}
}

// onCallStack runs f on a goroutine of its own and waits for it. A step
// (a Redis client's call path, a span, a log entry) needs several
// kilobytes of stack; run on the loop goroutine it would grow that stack
// for good, since a goroutine parked in the loop's wait never shrinks
// below 4 KB. The loop waits for f exactly as it waited for the step
// before, so cancellation and hanging calls behave the same; f must not
// panic (step and watch recover).
func onCallStack(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// tryAcquire calls the lock, storing the identity when the lock supports
// it. A panic or a nil lease without error becomes errLockFault.
func (e *Elector) tryAcquire(ctx context.Context) (l locking.Lease, err error) {
	defer func() {
		if r := recover(); r != nil {
			l, err = nil, fmt.Errorf("%w: TryAcquire panicked: %v", errLockFault, r)
		}
	}()
	if ol, ok := e.lock.(locking.OwnedLock); ok {
		l, err = ol.TryAcquireAs(ctx, e.key, e.opts.Lease, e.identity)
	} else {
		l, err = e.lock.TryAcquire(ctx, e.key, e.opts.Lease)
	}
	switch {
	case err == nil && l == nil:
		return nil, fmt.Errorf("%w: TryAcquire returned neither a lease nor an error", errLockFault)
	case err != nil && l != nil:
		l = nil
	}
	if errors.Is(err, locking.ErrInvalidKey) || errors.Is(err, locking.ErrInvalidLease) {
		err = fmt.Errorf("%w: %w", errLockFault, err)
	}
	return l, err
}

// extend renews l; a panic becomes errLockFault.
func (e *Elector) extend(ctx context.Context, l locking.Lease) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: Extend panicked: %v", errLockFault, r)
		}
	}()
	err = l.Extend(ctx, e.opts.Lease)
	if errors.Is(err, locking.ErrInvalidKey) || errors.Is(err, locking.ErrInvalidLease) {
		err = fmt.Errorf("%w: %w", errLockFault, err)
	}
	return err
}

// unavailable logs a provider failure: at Warn once per outage, at Debug
// for every retry (E7).
func (e *Elector) unavailable(st *loopState, op string, err error) {
	if !st.outage {
		st.outage = true
		e.log.Warn("LeadershipProviderUnavailable", zap.String("op", op), zap.Error(err))
		return
	}
	e.log.Debug("LeadershipProviderRetry", zap.String("op", op), zap.Error(err))
}

// recovered logs the end of an outage once, at Info (E7).
func (e *Elector) recovered(st *loopState) {
	if st.outage {
		st.outage = false
		e.log.Info("LeadershipProviderRecovered")
	}
}
