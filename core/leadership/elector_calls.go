package leadership

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hostloom/hostloom/core/locking"
)

// errLockFault marks a lock call that panicked or broke the Lock contract
// (E10), as opposed to a provider failure (E6, E7).
var errLockFault = errors.New("leadership: lock fault")

// opKind is the kind of a lock call.
type opKind int

const (
	opAcquire opKind = iota + 1
	opRenew
	opRelease
	opWatch
	opUnwatch
	opDeregister
)

// registers reports whether a call of kind k may register its elector as
// a participant (P1): an acquisition attempt or a renewal. The machine
// has at most one under way (loop.step).
func (k opKind) registers() bool { return k == opAcquire || k == opRenew }

func (k opKind) String() string {
	switch k {
	case opAcquire:
		return "acquire"
	case opRenew:
		return "renew"
	case opRelease:
		return "release"
	case opWatch:
		return "watch"
	case opUnwatch:
		return "unwatch"
	default:
		return "deregister"
	}
}

// call is one lock call under way on a goroutine of its own. The loop
// creates it and reads its outcome; the goroutine only runs the lock.
type call struct {
	op      opKind
	sent    time.Time
	bound   time.Duration // the call's context ends at sent+bound
	term    uint64        // opRenew: the term it renews
	lease   locking.Lease // opRenew, opRelease: the lease it works on
	cancel  context.CancelFunc
	done    func(error) // opRelease, opDeregister: run by the loop with the outcome
	ended   Reason      // opRenew: why its term ended while it was under way (0: it did not)
	overdue bool        // it overran its bound and was reported
}

// outcome is what a call reports back to the loop.
type outcome struct {
	c       *call
	err     error
	lease   locking.Lease // opAcquire: the granted lease
	granted time.Duration // opAcquire, opRenew: what the backend granted
	fence   uint64        // opAcquire: the lease's fence
	// opRenew: a higher-priority participant has been live for a lease (B2)
	preempted bool

	stopWatch func() // opWatch: ends the subscription
}

// send reports a call's outcome to the machine from the call's own
// goroutine, which has nothing left to do: when the machine is idle, that
// goroutine runs it (one goroutine hand-off less per call).
func (l *loop) send(o *outcome) { l.inbox.run(message{kind: msgOutcome, o: o}) }

// start runs fn on a goroutine of its own with ctx, which cancel ends,
// and reports its outcome to the loop. The lock is foreign code: a panic
// in it becomes an errLockFault error (E10), and a call that never returns
// holds only its own goroutine.
func (l *loop) start(c *call, ctx context.Context, cancel context.CancelFunc, fn func(context.Context, *outcome) error) {
	c.cancel = cancel
	if c.op.registers() {
		l.step = c
		l.e.regs.begun.Add(1)
	} else {
		l.pending++
	}
	if g := l.gateFor(c); g != nil {
		// One of thousands of calls at once (see callGate).
		g.spawn(func() { l.run(c, ctx, fn) })
		return
	}
	go l.run(c, ctx, fn)
}

// startBounded starts a call with a bound (an acquisition attempt, a
// renewal): its context ends at c.sent+c.bound, or when c.cancel is
// called. A call that goes through a gate gets that deadline from
// boundOnceSent when the gate runs it: thousands of calls waiting in a
// gate hold no timer each, whose firing at one instant would start as
// many goroutines.
func (l *loop) startBounded(c *call, fn func(context.Context, *outcome) error) {
	deadline := c.sent.Add(c.bound)
	if l.gateFor(c) != nil {
		ctx, cancel := context.WithCancel(l.base)
		l.start(c, ctx, cancel, boundOnceSent(c.op, deadline, fn))
		return
	}
	ctx, cancel := context.WithDeadline(l.base, deadline)
	l.start(c, ctx, cancel, fn)
}

// boundOnceSent wraps a call with a bound that waits in a gate: it runs
// with its deadline once the gate runs it, and one whose deadline passed,
// or whose context ended, while it waited is not sent: it was held back by
// this process's own load and never reached the lock, as one that waited
// in the lock's own queue past its deadline (locking.ErrNotSent).
func boundOnceSent(op opKind, deadline time.Time, fn func(context.Context, *outcome) error) func(context.Context, *outcome) error {
	return func(ctx context.Context, o *outcome) error {
		err := ctx.Err()
		if err == nil && !time.Now().Before(deadline) {
			err = context.DeadlineExceeded
		}
		if err != nil {
			return fmt.Errorf("leadership: %s waited behind the process's other calls: %w: %w", op.noun(), locking.ErrNotSent, err)
		}
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		return fn(ctx, o)
	}
}

// noun names a call of kind k in an error.
func (k opKind) noun() string {
	if k == opRenew {
		return "renewal"
	}
	return "acquisition"
}

// gateFor returns the gate c runs through, nil for none: a leave's gate
// for its releases, deregistrations and unsubscriptions (StopAll,
// Process.Leave); the process's gates for the acquisition attempts, the
// subscriptions and the renewals of an elector a Process created, a
// renewal never behind anything but renewals. An elector of its own
// runs its calls at once, but in a leave.
func (l *loop) gateFor(c *call) *callGate {
	switch c.op {
	case opRenew:
		if g := l.e.procGate; g != nil {
			return g.renew
		}
		return nil
	case opAcquire:
		if g := l.e.procGate; g != nil {
			return g.acquire
		}
		return nil
	case opWatch:
		if g := l.e.procGate; g != nil && l.leave == nil {
			return g.watch
		}
	}
	return l.leave
}

// run is the body of a lock call's goroutine. Its frame is on the stack
// for as long as the lock call blocks, under the lock's own frames, so it
// holds little: the span is begun and the outcome reported by functions
// that return before, or are called after, the lock call. A goroutine
// starts with 2 KB of stack and doubles it when its frames need more;
// over redislock an acquisition's frames took just over 4 KB with the
// span and the report inlined here, so every call in flight held 8 KB.
func (l *loop) run(c *call, ctx context.Context, fn func(context.Context, *outcome) error) {
	o := &outcome{c: c}
	spanCtx, sp := l.e.tel.beginCall(ctx, c.op)
	o.err = guard(c.op, func() error { return fn(spanCtx, o) })
	l.report(sp, o)
}

// beginCall starts the span of a call of kind op (kept out of run's frame).
//
//go:noinline
func (t *electorTelemetry) beginCall(ctx context.Context, op opKind) (context.Context, trace.Span) {
	return t.span(ctx, spanName(op))
}

// report ends a call's span and context, counts an attempt or renewal
// the lock answered (regCalls), and sends the outcome to the machine
// (kept out of run's frame; the outcome is classified once, for both).
//
//go:noinline
func (l *loop) report(sp trace.Span, o *outcome) {
	kind := classify(o.c.op, o.err)
	if o.c.op.registers() && settled(kind, o.err) {
		l.e.regs.answered.Add(1)
	}
	endSpan(sp, kind, o.err)
	o.c.cancel()
	l.send(o)
}

// guard runs the lock call fn, turning a panic into errLockFault.
func guard(op opKind, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s panicked: %v", errLockFault, op, r)
		}
	}()
	return fn()
}

// lockErr marks errors that break the Lock contract as faults.
func lockErr(err error) error {
	if errors.Is(err, locking.ErrInvalidKey) || errors.Is(err, locking.ErrInvalidLease) {
		return fmt.Errorf("%w: %w", errLockFault, err)
	}
	return err
}

func spanName(op opKind) string {
	switch op {
	case opAcquire:
		return SpanAcquire
	case opRenew:
		return SpanRenew
	case opRelease:
		return SpanRelease
	case opWatch:
		return SpanWatch
	case opUnwatch:
		return SpanUnwatch
	default:
		return SpanDeregister
	}
}

// classify names a call's outcome as the metrics and spans do.
func classify(op opKind, err error) string {
	switch {
	case err == nil && op == opAcquire:
		return outcomeAcquired
	case err == nil:
		return outcomeOK
	case errors.Is(err, errLockFault):
		return outcomeFault
	case op == opAcquire && errors.Is(err, locking.ErrNotAcquired):
		return outcomeHeld
	case op != opAcquire && errors.Is(err, locking.ErrLeaseLost):
		return outcomeRefused
	case errors.Is(err, locking.ErrNotAcknowledged):
		return outcomeUnacked
	default:
		return outcomeError
	}
}

// settled reports whether an attempt or a renewal whose outcome is kind
// (see classify) and error err left nothing that can still reach the
// lock: the lock answered (whatever it registered is in place), or the
// call was never sent. One that failed otherwise (a timeout, a connection
// lost with the call on the wire) may yet register its sender, so a
// leave's withdrawal after it is not the last word (see regCalls).
func settled(kind string, err error) bool {
	switch kind {
	case outcomeError, outcomeFault:
		return errors.Is(err, locking.ErrNotSent)
	}
	return true
}

// finish takes a call's outcome while the machine contends or leads.
func (l *loop) finish(o outcome) {
	switch o.c.op {
	case opAcquire:
		l.step = nil
		if l.leave != nil {
			l.withdrawAgain(l.base, o)
		}
		l.acquired(o)
	case opRenew:
		l.step = nil
		l.renewed(o)
	case opWatch:
		l.pending--
		l.watching(o)
	default:
		l.pending--
		if o.c.done != nil {
			o.c.done(o.err)
		}
	}
}

// finishStopping takes a call's outcome while Stop waits (phaseStopping).
// Nothing may begin a term or a subscription: a lease an acquisition
// brings goes back, a subscription made ends.
func (l *loop) finishStopping(o outcome) {
	switch o.c.op {
	case opAcquire:
		l.step = nil
		if o.err == nil {
			// The attempt registered this participant again: the release
			// withdraws it (H2).
			l.releaseAndWithdraw(l.stopping.req, o.lease, "")
		} else {
			l.withdrawAgain(l.stopping.req.ctx, o)
		}
	case opRenew:
		l.step = nil
	case opWatch:
		l.pending--
		l.unwatch(o.stopWatch)
	default:
		l.pending--
		if o.c.done != nil {
			o.c.done(o.err)
		}
	}
}
