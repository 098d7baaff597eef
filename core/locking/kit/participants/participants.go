// Package participants holds the rules a backend applies to a key's
// participants (P1) and their priorities (B2), for a backend that decides
// them in Go: the top priority a refusal reports, whether a free key waits
// for a participant of a higher priority, whether an extension is
// preempted and how many participants it counts. memlock and etcdlock use
// it; redislock and pglock decide the same rules inside their servers (a
// script, a statement), in the round trip that registers, and
// lockingtest's priority checks hold every backend to them.
//
// The functions take the participants as an iterator, so a backend can
// pass its own records (decoding them, skipping expired ones) without
// building a slice.
package participants

import (
	"iter"
	"sync"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// Top is the TopPriority a refused acquisition reports
// (AcquireResult.TopPriority): the highest priority among ps, 0 when ps
// is empty. When the request registered owner (register), owner counts
// with priority whether or not ps lists it yet (a backend may read the
// participants before its own registration is written), and an older
// record of owner in ps is skipped.
func Top(ps iter.Seq[locking.Participant], owner string, priority int, register bool) int {
	top, found := 0, false
	if register {
		top, found = priority, true
	}
	for pt := range ps {
		if register && pt.Owner == owner {
			continue
		}
		if !found || pt.Priority > top {
			top, found = pt.Priority, true
		}
	}
	return top
}

// Higher is the highest priority among the participants of ps other than
// owner whose priority is above priority; ok is false when there is none,
// and a free key is then the caller's to take at once (B2).
func Higher(ps iter.Seq[locking.Participant], owner string, priority int) (top int, ok bool) {
	for pt := range ps {
		if pt.Owner != owner && pt.Priority > priority && (!ok || pt.Priority > top) {
			top, ok = pt.Priority, true
		}
	}
	return top, ok
}

// Extension is what an extension by owner (at priority, for ttl) reports
// from ps, the key's live participants at now: how many there are, the
// holder counted once whether or not ps lists it, and whether one other
// participant of a higher priority has been registered for at least ttl,
// so the holder hands over (B2, ExtendResult.Preempt).
func Extension(ps iter.Seq[locking.Participant], owner string, priority int, ttl time.Duration, now time.Time) (count int, preempt bool) {
	count = 1
	for pt := range ps {
		if pt.Owner == owner {
			continue
		}
		count++
		if pt.Priority > priority && !pt.Since.Add(ttl).After(now) {
			preempt = true
		}
	}
	return count, preempt
}

// Yields keeps, per key, when a free key was first found while a
// participant of a higher priority was live: an acquisition with
// AcquireRequest.Yield waits from then, not from each attempt (B2). The
// zero value is ready to use; it is safe for concurrent use.
type Yields struct {
	mu    sync.Mutex
	since map[string]time.Time
}

// Wait is how long an acquisition of key must still wait at now for a
// participant of a higher priority, yield after the key was first found
// free with one live; 0 means it may take the key. The first call for a
// key starts its clock.
func (y *Yields) Wait(key string, yield time.Duration, now time.Time) time.Duration {
	y.mu.Lock()
	defer y.mu.Unlock()
	since, ok := y.since[key]
	if !ok {
		if y.since == nil {
			y.since = make(map[string]time.Time)
		}
		since = now
		y.since[key] = now
	}
	return max(since.Add(yield).Sub(now), 0)
}

// Reset forgets key's clock: call it when the key is taken, or found
// free with no participant of a higher priority, so the next wait starts
// afresh.
func (y *Yields) Reset(key string) {
	y.mu.Lock()
	delete(y.since, key)
	y.mu.Unlock()
}
