package roundtrip

import "time"

// Option configures a Queue.
type Option interface {
	apply(*options)
}

type options struct {
	max      int
	hold     bool
	detached bool
	grace    time.Duration
	late     bool
	timeout  time.Duration
	wireWait time.Duration
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// MaxCalls caps the calls one round trip carries at n; calls queued
// beyond it wait for the next round trip, the first queued first, so a
// caller whose context ends before its turn is skipped and nothing needs
// undoing. The default, 0 (or any n below 1), is no cap.
func MaxCalls(n int) Option {
	return optionFunc(func(o *options) { o.max = max(n, 0) })
}

// HoldLate keeps a queued call whose deadline leaves less time than the
// last round trip took in the queue for the next round, unless it is the
// round's call due last (each round sends at least one call, so a slow
// round trip's measure does not hold calls back for long): its reply
// would most likely come after its caller gave up, and a call the server
// runs that late (a renewal over a slow link) extends a lease its holder
// no longer counts on. The call leaves the queue, unsent, when its
// context ends. By default no call is held.
func HoldLate() Option {
	return optionFunc(func(o *options) { o.hold = true })
}

// Detached sends every call, a lone one too, from the Queue's goroutine,
// on a context of the round trip's own that ends grace after the latest
// of its callers' deadlines: a caller's deadline or cancellation never
// cuts a round trip short (a driver that closes its connection when a
// statement's context ends would otherwise pay for a new connection at
// every deadline). By default a lone call is sent by its caller on its
// own context, and a round of several calls ends at the latest of their
// deadlines.
func Detached(grace time.Duration) Option {
	return optionFunc(func(o *options) { o.detached, o.grace = true, max(grace, 0) })
}

// LateReplies gives a caller whose deadline passed while its call was on
// the wire the reply, when it comes within the wire wait, rather than
// its context's error: a lease the server granted or extended still
// counts, since its holder measures it from before it called. A caller
// that cancelled its context gets the context's error either way. By
// default a caller whose context ended gets the context's error.
func LateReplies() Option {
	return optionFunc(func(o *options) { o.late = true })
}

// Timeout bounds a round trip none of whose callers set a deadline. The
// default is DefaultTimeout; d below 1 keeps it.
func Timeout(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	})
}

// WireWait is how long a caller whose context ended while its call was on
// the wire waits for the reply before it returns. The default is
// DefaultWireWait; d below 0 keeps it.
func WireWait(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d >= 0 {
			o.wireWait = d
		}
	})
}
