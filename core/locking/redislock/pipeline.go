package redislock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/roundtrip"
)

// call is one script call, its caller's context (a NOSCRIPT resend skips
// the calls whose callers gave up) and, once sent, its reply.
type call struct {
	ctx  context.Context
	s    script
	args []any
	cmd  *redis.Cmd
}

// maxPipeline is the most calls one pipelined round trip carries. Calls
// queued beyond it wait for the next round trip, so the first to queue
// are answered first, and a caller whose context ends before its turn
// is skipped: nothing is sent for it, so nothing needs cleaning up. One
// pipeline of 100,000 acquisitions (a process starting that many
// candidates) took longer than the candidates' deadline, and every
// acquisition that timed out then sent a cleanup.
const maxPipeline = 1024

// newQueue returns a queue of p's script calls.
//
// A Provider coalesces the script calls of one kind that fall due while
// another is on the wire into one pipelined round trip (on Cluster
// go-redis splits a pipeline by node), through a roundtrip.Queue per
// kind: acquisitions and reads (candidates' tries, a balance round's
// reads), renewals, releases (and the cleanups of failed acquisitions),
// deregistrations; a renewal or a release never waits behind a call of
// another kind. A lone call is sent at once, by its caller; only those
// that arrive while one is in flight wait for it, so none is sent later
// than the in-flight one's reply. An elector measures its deadline from
// before it called Extend or Acquire, so the wait only makes that
// deadline more conservative. A caller whose context ends while its call
// is queued takes it out (nothing is sent); while it is on the wire,
// waits for the reply as a lost reply's cleanup would: a call whose
// deadline passed on the wire returns the reply that came
// (roundtrip.LateReplies: an acquisition or a renewal the server granted
// still counts, since its caller measures the lease from before it called
// (E5), and undoing it would throw away the work of a saturated server
// and bring another try), any other returns the context's error, and
// Acquire's cleanup follows the acquisition.
func (p *Provider) newQueue() *roundtrip.Queue[call] {
	return roundtrip.New(p.send, roundtrip.MaxCalls(maxPipeline), roundtrip.LateReplies(), roundtrip.WireWait(cleanupTimeout))
}

// errNotSent is wrapped, with the caller's context error, by the error of
// a call whose context ended while it was queued: it never reached the
// server (see mayHaveRun). When the server answered other round trips
// while the call waited, the error wraps locking.ErrNotSent instead.
var errNotSent = errors.New("not sent")

// runBatched runs s like run, coalescing with the calls queued meanwhile.
func (p *Provider) runBatched(ctx context.Context, s script, args []any) *redis.Cmd {
	return p.runOn(p.batch, ctx, s, args)
}

// runOn runs s like run through q: at once when q has nothing on the
// wire, else in q's next pipelined round trip. Releases and
// deregistrations have queues of their own, so a Stop's release never
// waits behind its own deregistration or another elector's renewal.
func (p *Provider) runOn(q *roundtrip.Queue[call], ctx context.Context, s script, args []any) *redis.Cmd {
	c, err := q.Do(ctx, call{ctx: ctx, s: s, args: args})
	if err == nil {
		return c.cmd
	}
	cmd := redis.NewCmd(ctx)
	var ns *roundtrip.NotSentError
	switch {
	case !errors.As(err, &ns):
		cmd.SetErr(err)
	case ns.Saturated:
		// The queue was longer than the server serves in the call's
		// time: the error matches locking.ErrNotSent, and an elector
		// backs off.
		cmd.SetErr(fmt.Errorf("%w: %w", ns.Err, locking.ErrNotSent))
	default:
		// The server answered nothing meanwhile (a round trip stuck on
		// the wire: a server paused or gone): an outage like any
		// unanswered call.
		cmd.SetErr(fmt.Errorf("%w: %w", ns.Err, errNotSent))
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

// send is the queues' transport: a lone call is run like run, several in
// one pipeline (see pipeline). It reports whether the server answered.
func (p *Provider) send(ctx context.Context, calls []call) bool {
	if len(calls) == 1 {
		c := &calls[0]
		c.cmd = p.run(ctx, c.s, c.args)
		return answered(c.cmd.Err())
	}
	return p.pipeline(ctx, calls)
}

// pipeline runs calls in one pipeline on ctx, and the calls that met
// NOSCRIPT (and whose callers still wait) again in a second one that
// carries their scripts (EVAL loads them). It reports whether the server
// answered.
func (p *Provider) pipeline(ctx context.Context, calls []call) bool {
	pipe := p.c.Pipeline()
	for i := range calls {
		c := &calls[i]
		c.cmd = pipe.Do(ctx, c.s.head(c.args, false)...)
	}
	_, err := pipe.Exec(ctx)
	ok := answered(err)
	// A server that restarted empty (or ran SCRIPT FLUSH) answers NOSCRIPT
	// to every call of the round: send them all again in one round trip,
	// with the scripts' source, rather than one after the other (the last
	// caller of a large round, a leader verifying its lease after the
	// restart among them, would wait a round trip per call before it: Q1).
	var again []*call
	for i := range calls {
		c := &calls[i]
		if err := c.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") && c.ctx.Err() == nil {
			again = append(again, c)
		}
	}
	if len(again) == 0 {
		return ok
	}
	pipe = p.c.Pipeline()
	for _, c := range again {
		c.cmd = pipe.Do(ctx, c.s.head(c.args, true)...)
	}
	_, _ = pipe.Exec(ctx)
	return ok
}
