package leadership

import (
	"context"
	"sync/atomic"
	"time"
)

// link is the notification link: the machine's subscription to the
// lock's events (L7, P2, P3) and what its drops and returns mean (Q1). It
// is a small machine of its own, driven by the loop (its consumer owns
// it) and told nothing else: it decides when a candidate's acquisition
// waits for the link, when a leader verifies its lease, and when a
// candidate may try after the link came back. It does no I/O.
//
// A drop of a link to a server that may lose its state (not durable) is
// counted: until the link is back, or one lease has passed, a candidate
// does not acquire (holds); when it is back, the leader verifies its
// lease at once (a renewal now, or right after the one under way: verify)
// and a candidate tries no sooner than a head start later (back), so the
// leader learns first whether the server lost the role.
type link struct {
	live     atomic.Bool // the subscription is live (P3); Describe reads it from any goroutine
	deferred bool        // an acquisition waits for the link
	unsure   bool        // a renewal of this term failed with an unknown outcome (it may still land)
	// verify: the link came back while a renewal was under way; that
	// renewal may have been answered before the server lost its state,
	// so another one follows at once.
	verify bool

	subscriptions int       // EventSubscribed seen so far
	droppedAt     time.Time // when the live subscription dropped; zero while live, or when the drop is not counted
	notBefore     time.Time // the link came back to a candidate: no acquisition before then (the head start)

	stop     func()             // ends the subscription; nil when there is none
	cancel   context.CancelFunc // ends a subscription attempt (and its retry wait)
	failures int                // subscription attempts failed in a row
}

// up takes EventSubscribed: the link is live. It reports whether this is
// the first subscription (first) or a return after the link dropped.
func (k *link) up() (first bool) {
	k.live.Store(true)
	k.subscriptions++
	return k.subscriptions == 1
}

// down takes EventUnsubscribed at now. A drop is counted when the link
// was live, no drop is counted yet and the server may lose its state
// (durable false, Q1). It reports whether it counted one.
func (k *link) down(now time.Time, durable bool) bool {
	counted := k.live.Load() && k.droppedAt.IsZero() && !durable
	if counted {
		k.droppedAt = now
	}
	k.live.Store(false)
	return counted
}

// ended takes the end of the subscription by Stop: the link is not live.
func (k *link) ended() { k.live.Store(false) }

// holds reports whether a candidate's acquisition due at now waits for
// the link, and until when: the drop was counted less than lease ago and
// the link has not come back, or it came back less than the head start
// ago (see back). A lease after the drop the attempt goes ahead without
// it: a leader cut off that long has lost its term by its own deadline,
// and a link that cannot come back must not keep a candidate from a role
// whose leader is gone.
func (k *link) holds(now time.Time, lease time.Duration) (until time.Time, ok bool) {
	if k.live.Load() && now.Before(k.notBefore) {
		// Whatever made the attempt due (the outcome of one abandoned at
		// the drop and answered only now, a wake): the leader gets its
		// head start.
		return k.notBefore, true
	}
	if k.live.Load() || k.droppedAt.IsZero() {
		return time.Time{}, false
	}
	until = k.droppedAt.Add(lease)
	if !now.Before(until) {
		return time.Time{}, false
	}
	k.deferred = true
	return until, true
}

// back takes the link's return at now after a counted drop (ok false
// when none was counted): a candidate (leading false) tries no sooner
// than at, now plus the head start, whatever makes an attempt due
// meanwhile (holds); waited reports an acquisition that waited for the
// link, which is made at at.
func (k *link) back(now time.Time, head time.Duration, leading bool) (at time.Time, waited, ok bool) {
	if k.droppedAt.IsZero() {
		return time.Time{}, false, false
	}
	waited = k.deferred
	k.droppedAt, k.deferred = time.Time{}, false
	at = now.Add(head)
	if !leading {
		k.notBefore = at
	}
	return at, waited, true
}

// released takes a release announced over the live link: the server
// that came back has had the role held and given up, so nobody holds it
// there and the head start is over.
func (k *link) released() {
	if k.live.Load() {
		k.notBefore = time.Time{}
	}
}

// verifyAfter marks the renewal under way as one that may have been
// answered before the link came back (renewing true): its outcome is
// followed by another renewal at once (reverify).
func (k *link) verifyAfter(renewing bool) { k.verify = renewing }

// reverify reports, once, whether a renewal that just returned must be
// followed by another at once.
func (k *link) reverify() bool {
	v := k.verify
	k.verify = false
	return v
}

// termEnded forgets what concerned the ended term's renewals.
func (k *link) termEnded() { k.unsure, k.verify = false, false }
