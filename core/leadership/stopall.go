package leadership

import (
	"context"
	"errors"

	"go.uber.org/zap"
)

// StopAll stops many electors, as a process that leaves does (E8, B1,
// H2; Process.Leave runs the same code over a process's roles):
// first those that lead, in parallel, then the others, in parallel. The
// leaders' releases wake their roles' successors before the candidates'
// stops (ending subscriptions and loops) take the process's CPU and the
// lock's connections: a process stopping 50,000 electors hands its roles
// over in a fraction of the time its Stop calls take together.
//
// From StopAll on, the candidates among them make no new attempt and the
// leaders no renewal: either would register them as participants again
// (P1), and a balancing instance elsewhere, seeing this process lead fewer
// roles as it releases them, would count it and hand it roles, which it
// would not take (the role would wait for another taker) or would take
// only to release again. A role handed to one of its candidates by name
// meanwhile (chosen before it withdrew) is taken all the same, as the
// others wait a RetryInterval for it, and is handed on in the second wave.
// A leader whose release comes after its lease's deadline loses its term
// then, as one that cannot renew. Before the leaders release, the others
// withdraw from their roles' participants.
//
// The leave's releases, deregistrations and unsubscriptions run at most
// 1024 at a time (the lock sends them a round trip at a time anyway); the
// others wait as small records, not as goroutines, so memory does not
// peak with the number of roles while the process leaves. Renewals and
// acquisitions of the electors not stopped yet never wait behind them.
//
// An elector that leads when StopAll looks is stopped in the first wave;
// one that wins a role meanwhile releases it in the second. ctx bounds
// every Stop, as in Stop. It returns once every elector has stopped, with
// their errors joined. A nil elector is skipped.
func StopAll(ctx context.Context, electors ...*Elector) error {
	return errors.Join(stopElectors(ctx, electors, newCallGate(callsInFlight))...)
}

// stopElectors is StopAll, and the leave of a Process's roles without
// work (H2): it returns each elector's error, in the order of electors.
// The leave's lock calls (releases, deregistrations, unsubscriptions) run
// through g.
func stopElectors(ctx context.Context, electors []*Elector, g *callGate) []error {
	var leading, others []int // indices into electors
	for _, e := range electors {
		if e != nil {
			e.leave(g)
		}
	}
	for i, e := range electors {
		switch {
		case e == nil:
		case e.IsLeader():
			leading = append(leading, i)
		default:
			others = append(others, i)
		}
	}
	out := make([]error, len(electors))
	g.each(others, func(i int) { electors[i].withdraw(ctx) })
	stopEach(ctx, electors, leading, out)
	stopEach(ctx, electors, others, out)
	return out
}

// stopEach stops the electors is selects, from the calling goroutine,
// and puts their errors in out: every Stop's first message is posted,
// then each stop request sent, then each Stop waited for. The Stops run
// at once in their machines (the releases on the leave's gate, a bounded
// number at a time), and no goroutine waits per elector: a process
// leaving 50,000 roles does not hold 50,000 stacks for it.
//
// They go stopWindow at a time: a window's Stops are begun and requested,
// then the previous window's are waited for, so at most two windows'
// Stop records (their messages, replies and requests, a few hundred
// bytes each) are alive at once, not one per role, while the gate, which
// sends callsInFlight calls at a time, always has the next window's
// calls waiting.
func stopEach(ctx context.Context, electors []*Elector, is []int, out []error) {
	var prev []*stopCall
	var prevIs []int
	for len(is) > 0 {
		n := min(len(is), stopWindow)
		win, calls := is[:n], make([]*stopCall, n)
		is = is[n:]
		for k, i := range win {
			calls[k] = electors[i].beginStop(ctx)
		}
		for _, s := range calls {
			s.request()
		}
		awaitStops(prev, prevIs, out)
		prev, prevIs = calls, win
	}
	awaitStops(prev, prevIs, out)
}

// stopWindow is how many Stops stopEach has begun and not yet waited
// for, per window: four times the gate's calls in flight, so the gate
// never runs dry between windows.
const stopWindow = 4 * callsInFlight

// awaitStops waits for each of calls, the Stops of electors is, and puts
// their errors in out.
func awaitStops(calls []*stopCall, is []int, out []error) {
	for k, i := range is {
		out[i] = calls[k].await()
	}
}

// leave tells the machine that its process leaves (StopAll, Process.Leave):
// a candidate makes no new attempt and a leader no renewal; its Stop
// follows. It is a message, taken in order with the others, but it wakes
// nothing: it changes what the machine does when it next acts (on its
// timer, a call's outcome, an event, Stop), and it is taken before that.
// So a process leaving 50,000 roles starts no goroutine for it. The
// machine's lock calls from then on, other than acquisitions and
// renewals, run through g, the leave's gate.
func (e *Elector) leave(g *callGate) { e.loop.inbox.queueOnly(message{kind: msgLeave, gate: g}) }

// withdraw deregisters a started elector from its role's participants
// ahead of its Stop. The Stop deregisters again only when a call that may
// have registered it anew (an attempt, a renewal) was under way during
// the withdrawal or began after it: it may have reached the lock after
// the deregistration. A failure is logged at Debug: Stop deregisters, and
// the registration lapses on its own (P1).
func (e *Elector) withdraw(ctx context.Context) {
	if !e.registered() || !e.running.Load() {
		return
	}
	// begun is read before answered: a call that begins after begun was
	// read leaves the count at Stop different from this one, and Stop
	// deregisters again.
	begun := e.regs.begun.Load()
	quiet := e.regs.answered.Load() == begun
	if err := e.caps.participants.Deregister(ctx, e.key, e.identity); err != nil {
		if deregisterFailed(err) {
			e.log.Debug("LeadershipWithdrawFailed", zap.Error(err))
		}
		return
	}
	if quiet {
		e.regs.withdrawnAt.Store(begun + 1)
	}
}
