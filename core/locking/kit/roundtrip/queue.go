package roundtrip

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// DefaultTimeout bounds a round trip none of whose callers set a
// deadline. Each caller still returns when its own context ends.
const DefaultTimeout = 5 * time.Second

// DefaultWireWait is how long a caller whose context ended while its call
// was on the wire waits for the reply before it returns its context's
// error: about as long as a backend gives the cleanup of a lost reply, so
// a cleanup the caller sends next follows the call it undoes.
const DefaultWireWait = time.Second

// keptBuffer is the largest round buffer a queue keeps between rounds; a
// larger one (a burst of many thousands of calls) is let go.
const keptBuffer = 1024

// SendFunc sends calls in one round trip on ctx, records each call's outcome
// in the call itself (calls[i]), and reports whether the server answered
// the round trip: with replies, errors the server sent included, rather
// than a timeout, a refused connection or a broken one. It is never
// called for an empty round, nor twice at once for one Queue; the slice
// is the Queue's and must not be kept.
type SendFunc[C any] func(ctx context.Context, calls []C) (answered bool)

// Queue coalesces the calls of type C that fall due while another is on
// the wire into one round trip. It is safe for concurrent use. See the
// package documentation for its rules. New makes one; the zero Queue has
// no transport and is not usable.
type Queue[C any] struct {
	send SendFunc[C]
	options

	mu    sync.Mutex
	busy  bool         // a round trip is in flight, or a flush runs
	queue []*waiter[C] // waiting for the next round trip, the first queued first
	// answered counts the round trips the server answered: a call that
	// leaves the queue unsent after some were answered while it waited
	// was held back by this process's own load, not by the server.
	answered uint64

	// Owned by whoever set busy (the caller sending a lone call, or the
	// flush goroutine): the last round trip's duration and the buffers a
	// round is built in.
	rtt   time.Duration
	buf   []C
	round []*waiter[C]
}

// waiter is one queued call.
type waiter[C any] struct {
	ctx      context.Context
	answered uint64 // Queue.answered when the call was queued
	c        C      // the call, and its outcome once done is closed
	err      error  // the queue's own error: the call was not sent
	done     chan struct{}
	state    state // under Queue.mu
}

// state is where a queued call is.
type state uint8

const (
	queued  state = iota // in the queue
	dropped              // its caller gave up; the next round skips it
	onWire               // taken for a round trip
	settled              // answered, or not sent (err set); done is closed
)

// New returns a Queue that sends its round trips with send.
func New[C any](send SendFunc[C], opts ...Option) *Queue[C] {
	o := options{timeout: DefaultTimeout, wireWait: DefaultWireWait}
	for _, opt := range opts {
		opt.apply(&o)
	}
	return &Queue[C]{send: send, options: o}
}

// Do sends c and returns it as the Queue's SendFunc left it, with a nil
// error, once the server answered (or the round trip failed: the outcome
// is in the call).
//
// A call made while nothing is on the wire is sent at once: by its caller
// on its own context, or with Detached by the Queue's goroutine. One made
// while a round trip is in flight waits for the next round trip, with the
// others queued meanwhile. When ctx ends before the call was sent, Do
// takes it out of the queue and returns a *NotSentError; nothing is sent.
// When ctx ends while the call is on the wire, Do waits for the reply (at
// most the wire wait: DefaultWireWait unless WireWait sets it) and returns
// ctx.Err() with c as it was passed, whose outcome is not to be read; with
// LateReplies, a reply that came after ctx's deadline is returned as if
// in time.
func (q *Queue[C]) Do(ctx context.Context, c C) (C, error) {
	q.mu.Lock()
	if !q.busy && !q.detached {
		q.busy = true
		q.mu.Unlock()
		return q.sendAlone(ctx, c), nil
	}
	w := &waiter[C]{ctx: ctx, answered: q.answered, c: c, done: make(chan struct{})}
	q.queue = append(q.queue, w)
	if !q.busy {
		q.busy = true
		go q.flush()
	}
	q.mu.Unlock()
	select {
	case <-w.done:
		return w.c, w.err
	case <-ctx.Done():
	}
	q.mu.Lock()
	if w.state == queued {
		// The next round skips it; nothing is sent.
		w.state = dropped
		saturated := q.answered > w.answered
		q.mu.Unlock()
		return c, &NotSentError{Err: ctx.Err(), Saturated: saturated}
	}
	q.mu.Unlock()
	// Settled (done is closed) or on the wire: wait, as long as a lost
	// reply's cleanup may, for the reply, so a cleanup the caller makes
	// next runs after the call did.
	t := time.NewTimer(q.wireWait)
	defer t.Stop()
	select {
	case <-w.done:
		if w.err != nil || (q.late && errors.Is(ctx.Err(), context.DeadlineExceeded)) {
			return w.c, w.err
		}
	case <-t.C:
	}
	return c, ctx.Err()
}

// Len returns how many calls wait for the next round trip, those whose
// callers gave up and that the next round skips included.
func (q *Queue[C]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// sendAlone sends c, a lone call, on its caller's context; the caller
// set busy. It starts the flush of the calls queued meanwhile, if any.
func (q *Queue[C]) sendAlone(ctx context.Context, c C) C {
	q.buf = append(q.buf[:0], c)
	var start time.Time
	if q.hold {
		start = time.Now()
	}
	answered := q.send(ctx, q.buf)
	if q.hold {
		q.rtt = time.Since(start)
	}
	c = q.buf[0]
	clear(q.buf)
	q.buf = q.buf[:0]
	q.mu.Lock()
	if answered {
		q.answered++
	}
	if len(q.queue) > 0 {
		// Keeps busy until the queue is drained; it lives as long as the
		// round trips it makes.
		go q.flush()
	} else {
		q.busy = false
	}
	q.mu.Unlock()
	return c
}

// flush sends the queued calls, a round trip at a time, until none is
// left; its caller set busy.
func (q *Queue[C]) flush() {
	for {
		q.mu.Lock()
		round, deadline := q.take(time.Now())
		if len(round) == 0 {
			q.busy = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		q.roundTrip(round, deadline)
	}
}

// take takes the next round's calls out of the queue, under q.mu: at most
// q.max of them, the first queued first, skipping the dropped ones and
// settling those whose context ended as not sent; with q.hold, the ones
// due before a round trip would come back stay queued, unless due last.
// It returns the round and its deadline: the latest of its callers'
// deadlines plus q.grace, or q.timeout from now for a caller without one.
func (q *Queue[C]) take(now time.Time) ([]*waiter[C], time.Time) {
	round := q.round[:0]
	var deadline time.Time
	best := -1 // the call due last
	n := 0     // calls of the queue looked at
	for _, w := range q.queue {
		if q.max > 0 && len(round) == q.max {
			break
		}
		n++
		if w.state == dropped {
			continue
		}
		if err := ctxErr(w.ctx, now); err != nil {
			w.err = &NotSentError{Err: err, Saturated: q.answered > w.answered}
			w.state = settled
			close(w.done)
			continue
		}
		d, ok := w.ctx.Deadline()
		if ok {
			d = d.Add(q.grace)
		} else {
			d = now.Add(q.timeout)
		}
		if d.After(deadline) {
			deadline, best = d, len(round)
		}
		round = append(round, w)
	}
	rest := q.queue[n:]
	var held []*waiter[C]
	if q.hold && len(round) > 1 {
		sent := round[:0]
		for i, w := range round {
			if d, ok := w.ctx.Deadline(); ok && i != best && d.Sub(now) < q.rtt {
				held = append(held, w)
				continue
			}
			sent = append(sent, w)
		}
		round = sent
	}
	if len(held) > 0 {
		q.queue = append(held, rest...)
	} else {
		clear(q.queue[:n]) // no hold on calls already answered
		q.queue = rest
		if len(q.queue) == 0 {
			q.queue = nil
		}
	}
	for _, w := range round {
		w.state = onWire
	}
	q.round = round
	return round, deadline
}

// roundTrip sends round, taken from the queue, in one round trip and
// settles its calls.
func (q *Queue[C]) roundTrip(round []*waiter[C], deadline time.Time) {
	q.buf = q.buf[:0]
	for _, w := range round {
		q.buf = append(q.buf, w.c)
	}
	var answered bool
	start := time.Now()
	if len(round) == 1 && !q.detached {
		answered = q.send(round[0].ctx, q.buf)
	} else {
		// A context of the round's own, so a caller's deadline or
		// cancellation never cuts the round trip short for the others.
		ctx, cancel := context.WithDeadline(context.WithoutCancel(round[0].ctx), deadline)
		answered = q.send(ctx, q.buf)
		cancel()
	}
	if q.hold {
		q.rtt = time.Since(start)
	}
	for i, w := range round {
		w.c = q.buf[i]
	}
	clear(q.buf)
	q.buf = q.buf[:0]
	q.mu.Lock()
	if answered {
		q.answered++
	}
	for _, w := range round {
		w.state = settled
	}
	q.mu.Unlock()
	for _, w := range round {
		close(w.done)
	}
	clear(round) // no hold on calls already answered
	if cap(q.buf) > keptBuffer {
		q.buf, q.round = nil, nil
	}
}

// ContextErr is ctx.Err(), or context.DeadlineExceeded once ctx's
// deadline has passed even if its timer has not fired yet. A provider asks
// it before it sends a call of its own and when it reports a failure, so
// a call whose time is up is neither sent nor blamed on the server.
func ContextErr(ctx context.Context) error { return ctxErr(ctx, time.Time{}) }

// ctxErr is ctx.Err(), or context.DeadlineExceeded once ctx's deadline
// has passed at now even if its timer has not fired yet. A zero now reads
// the clock, only when ctx has a deadline.
func ctxErr(ctx context.Context, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	if now.IsZero() {
		now = time.Now()
	}
	if !now.Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// NotSentError is the error of a call whose caller's context ended while
// the call was queued: it was never sent, so nothing is left to undo. It
// matches Err (the context's error) and, when Saturated,
// locking.ErrNotSent.
type NotSentError struct {
	// Err is the error of the caller's context.
	Err error
	// Saturated reports whether the server answered other round trips
	// while the call waited: the queue held more calls than the server
	// serves in the call's time, so the process, not the server, is the
	// bottleneck. When false the server answered nothing meanwhile (a
	// round trip stuck on the wire: a server paused or gone), which is
	// an outage like any unanswered call.
	Saturated bool
}

// Error returns the context's error followed by "not sent", or by
// locking.ErrNotSent's text when Saturated.
func (e *NotSentError) Error() string {
	if e.Saturated {
		return e.Err.Error() + ": " + locking.ErrNotSent.Error()
	}
	return e.Err.Error() + ": not sent"
}

// Unwrap returns the context's error, and locking.ErrNotSent when
// Saturated.
func (e *NotSentError) Unwrap() []error {
	if e.Saturated {
		return []error{e.Err, locking.ErrNotSent}
	}
	return []error{e.Err}
}
