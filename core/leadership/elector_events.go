package leadership

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/locking"
)

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
	postEvent := func(ev locking.Event) { l.post(message{kind: msgEvent, ev: &ev}) }
	ctx, cancel := context.WithCancel(context.Background())
	l.link.cancel = cancel
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
	l.link.cancel = nil
	if o.err != nil {
		if errors.Is(o.err, context.Canceled) {
			return
		}
		// The first failure of a streak is a fault; its retries are
		// logged at Debug, like every other retry.
		l.link.failures++
		if l.link.failures == 1 {
			l.e.log.Error("LeadershipLoopFaulted", zap.String("op", "watch"), zap.Error(o.err))
		} else {
			l.e.log.Debug("LeadershipSubscribeRetry", zap.Int("failures", l.link.failures), zap.Error(o.err))
		}
		l.watch(l.e.opts.RetryInterval)
		return
	}
	if l.link.failures > 0 {
		l.e.log.Info("LeadershipSubscribed", zap.Int("failures", l.link.failures))
		l.link.failures = 0
	}
	l.link.stop = o.stopWatch
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
		if l.cand == nil {
			// A release delivered while this instance leads predates its
			// term: nothing to wake, nothing to time. An expiry may be
			// this term's own lease, ended by the server before this
			// instance's deadline (a lease revoked early): verify it with
			// a renewal now, while the candidates hold back (Q1).
			if ev.Expired && l.lease != nil {
				l.verifyNow(now)
			}
			break
		}
		l.link.released()
		l.cand.freeSince, l.cand.freeKind = now, "handover"
		switch {
		case ev.Expired:
			// The server ended the holder's lease, which its holder may
			// still believe it holds: it gets the head start to verify
			// and stop before this candidate tries (Q1).
			l.cand.freeKind = "takeover"
			at := now.Add(l.headStart())
			if l.yields() {
				at = now.Add(e.opts.RetryInterval)
			}
			l.deferTo(at)
		case ev.Owner == "":
			l.wake(now)
		case ev.Owner == e.identity:
			l.cand.named = true
			l.wakeAt(now) // handed to this instance (B1): take it at once
		default:
			l.deferTo(now.Add(e.opts.RetryInterval)) // handed to another: it goes first
		}
	case locking.EventAcquired:
		if l.lease != nil && l.supersededBy(ev) {
			l.superseded(now, ev)
		}
		if ev.Owner != e.identity {
			l.observe(ev.Owner, now.Add(e.opts.Lease))
		}
	case locking.EventExtended:
		if l.lease == nil && ev.Owner != e.identity && ev.Remaining > 0 {
			l.observe(ev.Owner, now.Add(ev.Remaining))
			l.postpone(now, ev.Remaining)
		}
	case locking.EventResign:
		if l.lease != nil && (ev.Owner == "" || ev.Owner == e.identity) && ev.Target != e.identity {
			if ev.Target != "" {
				e.log.Info("LeadershipHandOverRequested", zap.String("to", ev.Target))
			} else {
				e.log.Info("LeadershipResignRequested")
			}
			ctx, cancel := context.WithTimeout(l.base, min(e.opts.RetryInterval, e.opts.Lease))
			// A hand-over names its successor (H4), as balancing does.
			l.stepDown(ctx, ev.Target, nil, func(error) { cancel() })
		}
	case locking.EventSubscribed:
		first := l.link.up()
		if first {
			l.e.log.Debug("LeadershipSubscriptionLive")
		}
		if !first && l.lease != nil {
			// The link dropped and came back: the server may have
			// restarted without its data, and an acquisition announced
			// meanwhile was lost. Verify the lease with a renewal now
			// instead of at the cadence (Q1).
			l.verifyNow(now)
		}
		if at, waited, ok := l.link.back(now, l.headStart(), l.lease != nil); ok && (waited || (l.lease == nil && l.due.Before(at))) {
			// Q1: a candidate tries no sooner than the head start from
			// now; an acquisition that waited for the link is made then.
			l.due = at
		}
		if first && l.learned.tried {
			// Events may have been lost before the subscription first
			// came up while this candidate had already been refused (a
			// release named to it, B1): one immediate try (P3).
			l.wake(now)
		}
		// After a reconnection a candidate keeps the RetryInterval
		// cadence it fell back to when the subscription dropped (a
		// release lost meanwhile is found by then), but tries no sooner
		// than linkHeadStart after it: the server may have restarted
		// without its data, and the leader, which verifies its lease at
		// once (above), gets the first chance to learn it lost the role
		// before a candidate takes the role it still works for (Q1).
	case locking.EventUnsubscribed:
		if l.link.down(now, e.caps.durable) {
			if l.lease == nil && l.step != nil && l.step.op == opAcquire {
				// Q1: an attempt still under way (waiting for a
				// connection, say) would be sent the moment a restarted
				// server is back, ahead of the leader's verification:
				// abandon it; the next one waits for the link.
				l.step.cancel()
			}
		}
		if l.phase == phaseCandidate && l.step == nil && l.due.After(now.Add(e.opts.RetryInterval)) {
			l.due = now.Add(e.opts.RetryInterval) // back to the candidate cadence
		}
	}
}

// linkHeadStart is how long after its subscription comes back a
// candidate waits before it tries to acquire (at most half its
// RetryInterval): the time the role's leader, reconnecting in its own
// process at about the same moment, has to verify its lease first (Q1).
const linkHeadStart = 50 * time.Millisecond

// headStart is linkHeadStart within half the RetryInterval.
func (l *loop) headStart() time.Duration {
	return min(linkHeadStart, l.e.opts.RetryInterval/2)
}

// deferForLink reports whether a candidate's acquisition due at now
// waits for the link (Q1, see link.holds), and sets the due time to the
// moment it stops waiting.
func (l *loop) deferForLink(now time.Time) bool {
	until, ok := l.link.holds(now, l.e.opts.Lease)
	if ok {
		l.due = until
	}
	return ok
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
		l.link.verifyAfter(l.step.op == opRenew)
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
		if l.cand.wokeDuring.IsZero() || at.Before(l.cand.wokeDuring) {
			l.cand.wokeDuring = at
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

// deferTo makes an idle candidate's next attempt come at at, whether it
// was due sooner or later: a role handed by name to another participant
// (B1) is left to it for a RetryInterval. Moving only a later attempt
// sooner, as wakeAt does, let an attempt already due within that time
// (a quiet candidate's periodic one, P3) take the role while the named
// taker's attempt was still on its way, so that the role moved twice:
// some 500 roles in a 50,000-role leave. An attempt under way is handled
// as by wakeAt.
func (l *loop) deferTo(at time.Time) {
	if l.lease == nil && l.step != nil && l.step.op == opAcquire {
		l.wakeAt(at)
		return
	}
	if l.phase != phaseCandidate || l.follows || l.step != nil {
		return
	}
	l.due = at
}

// postpone moves an idle candidate's next attempt, due when the lease it
// learned would run out, to when the extended lease (remaining from now)
// runs out (P3): over a live subscription a release wakes it, so only an
// expiry needs an attempt. It still tries within 3/2 of a Lease of its
// last attempt the lock answered, which registered it as a participant
// for two leases (P1), so its registration never lapses. An attempt that
// failed (the server was down) registered nothing: counting from it would
// let the registration lapse for up to 3/2 of a Lease after the server
// came back, with the candidate asleep and missing from the participants.
func (l *loop) postpone(now time.Time, remaining time.Duration) {
	e := l.e
	if !l.link.live.Load() || l.lease != nil || l.phase != phaseCandidate || l.follows || l.step != nil ||
		!l.cand.wokeDuring.IsZero() || !l.learned.tried {
		return
	}
	at := now.Add(min(remaining, MaxWait))
	if l.yields() {
		at = at.Add(e.opts.RetryInterval) // B1, B2: others first
	}
	if hb := l.learned.registered.Add(e.opts.Lease * 3 / 2); hb.Before(at) {
		at = hb
	}
	if at.After(l.due) {
		l.due = at
		l.cand.freeSince, l.cand.freeKind = now.Add(remaining), "takeover"
	}
}

// yields reports whether this candidate lets others take a free role
// first, for one RetryInterval: its balance group leads its share (B1), or
// a live participant has a higher priority (B2).
func (l *loop) yields() bool {
	return l.learned.topPriority > l.e.opts.Priority || l.e.heldBack()
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
	if errors.Is(err, locking.ErrUnauthorized) && !l.health.authFailed {
		// A configuration error, not an outage (O4): once at Error, then
		// retried quietly (below) in case the credentials are fixed.
		l.health.authFailed, l.health.outage = true, true
		l.e.log.Error("LeadershipProviderAuthFailed", zap.String("op", op), zap.Error(err),
			zap.String("advice", authAdvice(err)))
		return
	}
	if !l.health.outage {
		l.health.outage = true
		l.e.log.Warn("LeadershipProviderUnavailable", zap.String("op", op), zap.Error(err))
		return
	}
	l.e.log.Debug("LeadershipProviderRetry", zap.String("op", op), zap.Error(err))
}

// fault logs a lock fault (E10) at Error, once per faulted call.
func (l *loop) fault(op string, err error) {
	l.e.log.Error("LeadershipLoopFaulted", zap.String("op", op), zap.Error(err))
}

// unacknowledged logs an acquisition or renewal that too few replicas
// acknowledged (Q2): at Warn once per episode, naming the setting, the
// replicas it asks for, those that acknowledged and what it costs; at
// Debug for every retry. Each such call is counted in
// MetricUnacknowledged. It is not an outage: the server answered.
func (l *loop) unacknowledged(op string, err error) {
	l.recovered() // the server answered
	l.e.tel.unacknowledged(op)
	var ack *locking.AckError
	errors.As(err, &ack)
	want, got := 0, 0
	var timeout time.Duration
	if ack != nil {
		want, got, timeout = ack.Want, ack.Got, ack.Timeout
	}
	if l.health.unacked {
		l.e.log.Debug("LeadershipReplicasRetry", zap.String("op", op), zap.Int("acknowledged", got), zap.Error(err))
		return
	}
	l.health.unacked = true
	consequence := "no term begins: the acquisition was taken back, and is retried"
	if op == "renew" {
		consequence = "the term is not extended: it ends at its current deadline unless a renewal is acknowledged before then"
	}
	l.e.log.Warn("LeadershipReplicasNotAcknowledged", zap.String("op", op),
		zap.String("key", "locking.redis.min_replicas"), zap.Int("min_replicas", want),
		zap.Int("acknowledged", got), zap.Duration("timeout", timeout),
		zap.String("consequence", consequence), zap.Error(err))
}

// acknowledged logs the end of an episode of unacknowledged calls once, at
// Info (Q2): an acquisition or renewal counted again.
func (l *loop) acknowledged() {
	if l.health.unacked {
		l.health.unacked = false
		l.e.log.Info("LeadershipReplicasAcknowledged")
	}
}

// recovered logs the end of an outage once, at Info (E7).
func (l *loop) recovered() {
	l.health.authFailed = false
	if l.health.outage {
		l.health.outage = false
		l.e.log.Info("LeadershipProviderRecovered")
	}
}

// authAdvice is what LeadershipProviderAuthFailed advises for err: the
// provider's own advice when an error in err's chain has an Advice
// method (pglock names locking.postgres.dsn), else the Redis keys.
func authAdvice(err error) string {
	var a interface{ Advice() string }
	if errors.As(err, &a) {
		if s := a.Advice(); s != "" {
			return s
		}
	}
	return "check locking.redis.username and locking.redis.password (and the user's ACL)"
}
