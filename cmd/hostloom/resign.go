package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostloom/hostloom/core/locking"
)

// pollEvery is how often resign and release re-read the role while
// waiting for the next leader, in case a notification is lost.
const pollEvery = 100 * time.Millisecond

type handoverJSON struct {
	Role string `json:"role"`
	// Previous is the leader asked to step down (resign) or whose lease
	// was deleted (release), with its fence.
	Previous      string `json:"previous"`
	PreviousFence uint64 `json:"previous_fence,omitempty"`
	// Leader and Fence are the next term's, when one began within --wait.
	Leader string `json:"leader,omitempty"`
	Fence  uint64 `json:"fence,omitempty"`
	// LatencyMillis is the time from the request to the next leader's
	// acquisition, as this command observed it.
	LatencyMillis float64 `json:"latency_ms,omitempty"`
	// Waited reports whether the command waited for the next leader.
	Waited bool `json:"waited"`
}

func newResign(g *globals, sio stdio) *cobra.Command {
	var wait time.Duration
	c := &cobra.Command{
		Use:   "resign ROLE",
		Short: "Ask ROLE's leader to step down cooperatively",
		Long: `resign asks the current leader of ROLE to step down, through the lock's
notification channel: the leader's elector ends its term (its work's
contexts are cancelled first), releases the lease and sits out one retry
interval, and another participant takes the role. Nothing is deleted: a
leader that does not hear the request (an older version, no subscription)
keeps the role, and resign says so after --wait.

resign then waits up to --wait for the next term and reports its leader,
fence and how long the handover took. --wait 0 only sends the request.`,
		Example: `  hostloom resign billing -config app.yaml
  hostloom resign billing --wait 0 --json`,
		Args: exactArgs("ROLE"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return resign(cmd.Context(), g, sio, args[0], wait)
		}),
	}
	c.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the next leader; 0 does not wait")
	return c
}

func resign(ctx context.Context, g *globals, sio stdio, role string, wait time.Duration) error {
	return stepDown(ctx, g, sio, role, "", wait)
}

// stepDown asks role's leader to step down (resign, to "") or to hand
// the role to the participant to (handover), and waits up to wait for
// the next term: the request and the wait resign and handover share.
func stepDown(ctx context.Context, g *globals, sio stdio, role, to string, wait time.Duration) error {
	verb, gerund := "resign", "resign"
	if to != "" {
		verb, gerund = "handover", "hand over"
	}
	return withRole(ctx, g, sio, role, wait, func(e *env, rk roleKey) error {
		before, err := e.inspect(ctx, rk.key)
		if err != nil {
			return err
		}
		if !before.Held {
			return fmt.Errorf("role %q in namespace %q has no leader to %s", role, e.namespace(), gerund)
		}
		if err := canRequest(e.lock, role, verb); err != nil {
			return err
		}
		if to != "" {
			if err := checkSuccessor(role, to, before); err != nil {
				return err
			}
		}
		events, stop, _ := e.subscribe(ctx, rk.key)
		defer stop()
		start := time.Now()
		rctx, cancel := e.request(ctx)
		if to == "" {
			err = e.lock.RequestResign(rctx, rk.key, before.Holder.Owner)
		} else {
			err = e.lock.RequestHandOver(rctx, rk.key, before.Holder.Owner, to)
		}
		cancel()
		if err != nil {
			return err
		}
		out := handoverJSON{Role: role, Previous: before.Holder.Owner, PreviousFence: before.Fence, Waited: wait > 0}
		if wait > 0 {
			next, at, err := e.nextTerm(ctx, rk.key, before, events, start.Add(wait))
			if err != nil {
				return err
			}
			switch {
			case next.Held && next.Fence == before.Fence && next.Holder.Owner == before.Holder.Owner:
				return fmt.Errorf("role %q: leader %q did not step down within %v (does it run a HostLoom version that hears %s requests?)", role, before.Holder.Owner, wait, verb)
			case !next.Held && to == "":
				return fmt.Errorf("role %q: leader %q stepped down, but nobody took the role within %v", role, before.Holder.Owner, wait)
			case !next.Held:
				return fmt.Errorf("role %q: leader %q stepped down, but %q did not take the role within %v", role, before.Holder.Owner, to, wait)
			case to != "" && next.Holder.Owner != to:
				return fmt.Errorf("role %q: %q took the role, not %q (did %q stop meanwhile?)", role, next.Holder.Owner, to, to)
			}
			out.Leader, out.Fence = next.Holder.Owner, next.Fence
			out.LatencyMillis = float64(at.Sub(start).Microseconds()) / 1000
		}
		if g.structured() {
			return g.write(sio.out, out)
		}
		switch {
		case wait == 0 && to == "":
			fmt.Fprintf(sio.out, "Asked %s to step down from role %s.\n", out.Previous, role)
		case wait == 0:
			fmt.Fprintf(sio.out, "Asked %s to hand role %s to %s.\n", out.Previous, role, to)
		case to == "":
			fmt.Fprintf(sio.out, "%s stepped down from role %s; %s leads now (fence %s), %.1fms after the request.\n",
				out.Previous, role, out.Leader, showUint(out.Fence), out.LatencyMillis)
		default:
			fmt.Fprintf(sio.out, "%s handed role %s to %s (fence %s), %.1fms after the request.\n",
				out.Previous, role, out.Leader, showUint(out.Fence), out.LatencyMillis)
		}
		return nil
	})
}

// canResign reports, before anything is sent, that lock cannot deliver a
// resign request to role's leader.
func canResign(lock *locking.DistributedLock, role string) error {
	return canRequest(lock, role, "resign")
}

// canRequest reports, before anything is sent, that lock cannot deliver
// a request of verb (resign, handover) to role's leader (its provider
// publishes no resign requests, or no events the leader would hear them
// through).
func canRequest(lock *locking.DistributedLock, role, verb string) error {
	if lock.Features().Resign == nil {
		return fmt.Errorf("role %q: %s is not supported by this lock (its provider cannot send resign requests to the leader)", role, verb)
	}
	return nil
}

// withRole is the prologue resign and release share: it checks --wait,
// opens the namespace (withEnv), checks that the namespace knows role
// (lookup) and runs fn with the role's key. Each verb reads the role's
// state itself, since release must read the lease value first: a change
// of hands after that read is then caught before anything is deleted.
func withRole(ctx context.Context, g *globals, sio stdio, role string, wait time.Duration, fn func(e *env, rk roleKey) error) error {
	if wait < 0 {
		return badUsage("--wait %v must not be negative", wait)
	}
	return withEnv(ctx, g, sio, func(e *env) error {
		rk, err := e.lookup(ctx, role)
		if err != nil {
			return err
		}
		return fn(e, rk)
	})
}

// eventBuffer is how many events a subscription holds for its reader; a
// reader further behind loses ordinary events, never the subscription
// state (see sendEvent).
const eventBuffer = 16

// subscribe watches key's events and waits, up to the request timeout,
// until the subscription is live, so nothing published after it returns
// is missed; live reports whether it is. Without events (a lock whose
// provider publishes none) the channel is nil and callers poll.
func (e *env) subscribe(ctx context.Context, key string) (events <-chan locking.Event, stop func(), live bool) {
	ch := make(chan locking.Event, eventBuffer)
	stop, err := e.lock.Subscribe(key, func(ev locking.Event) { sendEvent(ch, ev) })
	if err != nil {
		return nil, func() {}, false
	}
	t := time.NewTimer(e.timeout)
	defer t.Stop()
	for {
		select {
		case ev := <-ch:
			if ev.Kind == locking.EventSubscribed {
				return ch, stop, true
			}
		case <-t.C:
			return ch, stop, false
		case <-ctx.Done():
			return ch, stop, false
		}
	}
}

// sendEvent delivers ev on ch without blocking (it runs on the provider's
// delivery goroutine): an ordinary event is dropped when ch is full; a
// subscription state event takes the place of the oldest pending event
// instead, so the reader always learns that something may be missing.
func sendEvent(ch chan locking.Event, ev locking.Event) {
	select {
	case ch <- ev:
		return
	default:
	}
	if ev.Kind != locking.EventSubscribed && ev.Kind != locking.EventUnsubscribed {
		return
	}
	select {
	case <-ch:
	default:
	}
	select {
	case ch <- ev:
	default:
	}
}

// nextTerm waits until key shows a term other than before's (another
// fence or holder), or until deadline, and returns the state last read
// and when the change was first noticed: an acquisition event, or the
// read that showed it.
func (e *env) nextTerm(ctx context.Context, key string, before locking.KeyState, events <-chan locking.Event, deadline time.Time) (locking.KeyState, time.Time, error) {
	changed := func(st locking.KeyState) bool {
		return st.Held && (st.Fence != before.Fence || st.Holder.Owner != before.Holder.Owner)
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	until := time.NewTimer(time.Until(deadline))
	defer until.Stop()
	last := before
	var readErr error // the latest read's, reported when the wait ends on it
	for {
		var at time.Time
		select {
		case ev := <-events:
			at = time.Now()
			if ev.Kind != locking.EventAcquired && ev.Kind != locking.EventReleased && ev.Kind != locking.EventSubscribed {
				continue
			}
		case <-tick.C:
			at = time.Now()
		case <-until.C:
			return last, time.Time{}, readErr
		case <-ctx.Done():
			return last, time.Time{}, ctx.Err()
		}
		st, err := e.inspect(ctx, key)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return last, time.Time{}, err
			}
			readErr = err
			continue // one failed read; the next tick tries again
		}
		last, readErr = st, nil
		if changed(st) {
			return st, at, nil
		}
	}
}
