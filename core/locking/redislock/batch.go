package redislock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
)

// batcher coalesces calls of one kind that fall due while another is on
// the wire into one pipelined round trip (on Cluster go-redis splits a
// pipeline by node). A Provider has four: acquisitions and reads
// (candidates' tries, a balance round's reads), renewals, releases (and
// the cleanups of failed acquisitions), deregistrations; a renewal or a
// release never waits behind a call of another kind. A lone call
// is sent at once, by its caller, as before; only those that arrive while
// one is in flight wait for it, so none is sent later than the in-flight
// one's reply. An elector measures its deadline from before it called
// Extend or Acquire, so the wait only makes that deadline more
// conservative. A caller whose context ends while its call is queued
// takes it out (nothing is sent); while it is on the wire, waits for the
// reply as a lost reply's cleanup would: a call whose deadline passed on
// the wire returns the reply that came (see runOn), any other returns
// the context's error, and Acquire's cleanup follows the acquisition.
type batcher struct {
	mu    sync.Mutex
	busy  bool       // a round trip is in flight
	queue []*pending // waiting for the next round trip
	// answered counts the round trips the server answered (with replies,
	// errors included, rather than a timeout or a broken connection).
	answered uint64
}

// pending is one queued script call.
type pending struct {
	ctx context.Context
	// answered is the batcher's count when the call was queued: a call
	// not sent although round trips were answered meanwhile waited in a
	// queue longer than the server takes to serve it (see notSent).
	answered uint64
	s        script
	args     []any
	cmd      *redis.Cmd
	done     chan struct{}
	// Under the batcher's mu: taken for a round trip, or dropped by its
	// caller (its context ended first) and skipped by the next one.
	taken, dropped bool
}

// maxPipeline is the most calls one pipelined round trip carries. Calls
// queued beyond it wait for the next round trip, so the first to queue
// are answered first, and a caller whose context ends before its turn
// is skipped: nothing is sent for it, so nothing needs cleaning up. One
// pipeline of 100,000 acquisitions (a process starting that many
// candidates) took longer than the candidates' deadline, and every
// acquisition that timed out then sent a cleanup.
const maxPipeline = 1024

// errNotSent is wrapped, with the caller's context error, by the error of
// a call whose context ended while it was queued: it never reached the
// server (see mayHaveRun). When the server answered other round trips
// while the call waited, the error wraps locking.ErrNotSent instead.
var errNotSent = errors.New("not sent")

// batchTimeout bounds a pipelined round trip whose callers set no
// deadline (each caller still returns when its own context ends).
const batchTimeout = 5 * time.Second

// runBatched runs s like run, coalescing with the calls queued meanwhile.
func (p *Provider) runBatched(ctx context.Context, s script, args []any) *redis.Cmd {
	return p.runOn(&p.batch, ctx, s, args)
}

// runOn runs s like run through batcher b: at once when b has nothing on
// the wire, else in b's next pipelined round trip. Releases and
// deregistrations have batchers of their own, so a Stop's release never
// waits behind its own deregistration or another elector's renewal.
func (p *Provider) runOn(b *batcher, ctx context.Context, s script, args []any) *redis.Cmd {
	b.mu.Lock()
	if !b.busy {
		b.busy = true
		b.mu.Unlock()
		cmd := p.run(ctx, s, args)
		b.mu.Lock()
		if answered(cmd.Err()) {
			b.answered++
		}
		if len(b.queue) > 0 {
			// Keeps busy until the queue is drained; it lives as long
			// as the round trips it makes.
			go p.flush(b)
		} else {
			b.busy = false
		}
		b.mu.Unlock()
		return cmd
	}
	w := &pending{ctx: ctx, answered: b.answered, s: s, args: args, done: make(chan struct{})}
	b.queue = append(b.queue, w)
	b.mu.Unlock()
	select {
	case <-w.done:
		return w.cmd
	case <-ctx.Done():
	}
	b.mu.Lock()
	taken := w.taken
	w.dropped = !taken
	saturated := b.answered > w.answered
	b.mu.Unlock()
	if taken {
		// On the wire: wait (as long as a lost reply's cleanup may) for
		// the reply. A call that was only late (its deadline passed on
		// the wire) gets the reply when it comes: an acquisition or a
		// renewal the server granted still counts, since its caller
		// measures the lease from before it called (E5), and undoing it
		// (Acquire's cleanup) would throw away the work of a saturated
		// server and bring another try. A call its caller cancelled, or
		// whose reply does not come, ends with the context's error, and
		// a cleanup the caller makes next (Acquire) runs after the
		// command did. args are not touched meanwhile.
		t := time.NewTimer(cleanupTimeout)
		select {
		case <-w.done:
			t.Stop()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return w.cmd
			}
		case <-t.C:
		}
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(ctx.Err())
		return cmd
	}
	return notSent(ctx, saturated)
}

// notSent is the reply of a call whose context ended before it was sent.
// When saturated (the server answered round trips while the call waited:
// the queue was longer than the server serves in the call's time) the
// error matches locking.ErrNotSent, and an elector backs off; when the
// server answered nothing meanwhile (a round trip stuck on the wire: a
// server paused or gone), it is an outage like any unanswered call.
func notSent(ctx context.Context, saturated bool) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	if saturated {
		cmd.SetErr(fmt.Errorf("%w: %w", ctx.Err(), locking.ErrNotSent))
	} else {
		cmd.SetErr(fmt.Errorf("%w: %w", ctx.Err(), errNotSent))
	}
	return cmd
}

// answered reports whether a round trip whose error is err got the
// server's reply: no error, or an error the server sent.
func answered(err error) bool {
	return err == nil || serverReplied(err)
}

// serverReplied reports whether err is an error reply the server sent
// (an error of the script or command, which ran or was refused there),
// rather than one of the client's (the network, the pool, a context that
// ended first).
func serverReplied(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// flush sends b's queued calls, at most maxPipeline per round trip, in
// the order they came, until none is left.
func (p *Provider) flush(b *batcher) {
	for {
		b.mu.Lock()
		q := make([]*pending, 0, min(len(b.queue), maxPipeline))
		n := 0
		for _, w := range b.queue {
			if len(q) == maxPipeline {
				break
			}
			n++
			if w.dropped {
				continue
			}
			w.taken = true
			q = append(q, w)
		}
		clear(b.queue[:n]) // no hold on calls already answered
		b.queue = b.queue[n:]
		if len(b.queue) == 0 {
			b.queue = nil
		}
		if len(q) == 0 {
			b.busy = false
			b.mu.Unlock()
			return
		}
		seen := b.answered
		b.mu.Unlock()
		if p.pipeline(q, seen) {
			b.mu.Lock()
			b.answered++
			b.mu.Unlock()
		}
	}
}

// pipeline runs q in one pipeline (a caller whose context has ended is
// skipped, not sent: saturated when the batcher's count of answered round
// trips, seen, passed the one the call was queued with), and the calls
// that met NOSCRIPT again in a second one that carries their scripts
// (EVAL loads them). It reports whether the server answered.
func (p *Provider) pipeline(q []*pending, seen uint64) bool {
	live := q[:0:0]
	var deadline time.Time
	for _, w := range q {
		if w.ctx.Err() != nil {
			w.cmd = notSent(w.ctx, seen > w.answered)
			close(w.done)
			continue
		}
		d, ok := w.ctx.Deadline()
		if !ok {
			d = time.Now().Add(batchTimeout)
		}
		if d.After(deadline) {
			deadline = d
		}
		live = append(live, w)
	}
	if len(live) == 0 {
		return false
	}
	if len(live) == 1 {
		w := live[0]
		w.cmd = p.run(w.ctx, w.s, w.args)
		ok := answered(w.cmd.Err())
		close(w.done)
		return ok
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	pipe := p.c.Pipeline()
	for _, w := range live {
		w.cmd = pipe.Do(ctx, w.s.head(w.args, false)...)
	}
	_, err := pipe.Exec(ctx)
	ok := answered(err)
	// A server that restarted empty (or ran SCRIPT FLUSH) answers NOSCRIPT
	// to every call of the round: send them all again in one round trip,
	// with the scripts' source, rather than one after the other (the last
	// caller of a large round, a leader verifying its lease after the
	// restart among them, would wait a round trip per call before it: Q1).
	var again []*pending
	for _, w := range live {
		if err := w.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") && w.ctx.Err() == nil {
			again = append(again, w)
			continue
		}
		close(w.done)
	}
	if len(again) == 0 {
		return ok
	}
	pipe = p.c.Pipeline()
	for _, w := range again {
		w.cmd = pipe.Do(ctx, w.s.head(w.args, true)...)
	}
	_, _ = pipe.Exec(ctx)
	for _, w := range again {
		close(w.done)
	}
	return ok
}
