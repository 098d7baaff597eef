// Package roundtrip is the coalescing round-trip queue a lock provider
// puts in front of its backend (X2): calls that fall due while another is
// on the wire go together in the next round trip, and a call whose caller
// gave up before it was sent is never sent. redislock and pglock use it;
// a provider in a module of its own imports it the same way.
//
// The provider supplies the transport, a SendFunc that sends a batch of
// calls in one round trip (a Redis pipeline, a PostgreSQL pipeline on one
// connection), records each call's outcome in the call and says whether
// the server answered. The Queue decides what goes in which round trip.
//
// # Rules
//
//   - A lone call (nothing on the wire) is sent at once, by its caller on
//     its own context (or, with Detached, by the Queue's goroutine).
//   - Calls made while a round trip is in flight queue, and go together
//     in the next round trip, the first queued first, so none is sent
//     later than the in-flight one's reply. MaxCalls caps a round.
//   - A caller whose context ends while its call is queued takes it out:
//     the call is never sent, and Do returns a *NotSentError wrapping the
//     context's error. When the server answered other round trips while
//     the call waited, the error matches locking.ErrNotSent (the process
//     is saturated, and an elector backs off); when it answered nothing
//     (a round trip stuck on the wire), it does not: that is an outage.
//   - A caller whose context ends while its call is on the wire waits for
//     the reply (at most WireWait, DefaultWireWait by default), so a
//     cleanup it sends next follows the call it undoes, and then returns
//     its context's error; with LateReplies, a reply that came after its
//     deadline counts.
//   - With HoldLate, a queued call whose deadline leaves less time than
//     the last round trip took waits for a later round, unless it is the
//     round's call due last.
//
// A round of several calls runs on a context of its own, carrying the
// values of its first call's context, that ends at the latest of its
// callers' deadlines (plus Detached's grace), or Timeout (DefaultTimeout
// by default) after it starts when none has a deadline.
//
// # What it does not do
//
// The Queue does not retry, and does not order calls of different
// Queues: a provider that must never hold a renewal behind candidates'
// tries gives each kind of call a Queue of its own. A call sent alone by
// its caller costs no goroutine and no allocation of the Queue's; a
// queued call costs one small allocation and a channel, and a flush
// goroutine runs while calls are queued.
//
// Rule ids (X2) are explained in docs/rules.md.
package roundtrip
