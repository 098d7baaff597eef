package leadership

import "sync"

// callsInFlight is how many lock calls a gate runs at once (one of
// redislock's pipelined round trips' worth). A process leaving 50,000
// roles makes about 100,000 calls (releases, deregistrations, the ends of
// subscriptions), and one starting, or taking over, as many makes about
// as many (attempts, subscriptions); the lock sends them a round trip at
// a time whatever their number, so those past the bound wait as a
// closure of a few dozen bytes rather than as a goroutine blocked in the
// lock, whose stack holds 4-8 KB. Two round trips' worth (2,048) took
// leaves and joins no faster in the 50,000-role × 3 cycle, and its three
// gates' goroutines put a replica's highest instant above 4 KB per
// elector in 9 of 20 readings (at or under 3,932 B in 10 of 10 with
// 1,024).
const callsInFlight = 1024

// keptQueue is the largest queue a gate keeps once it has drained, as
// roundtrip.Queue keeps its round buffer.
const keptQueue = 1024

// callGate runs lock calls with at most limit of them in flight; the
// others wait their turn, first come first run, and each finished call's
// goroutine runs the next one. A leave (StopAll, Process.Leave) has one
// for its releases, deregistrations and unsubscriptions; a Process has
// three for its electors: one for the acquisition attempts, one for the
// subscriptions (a process starting its roles, or taking over those
// another left) and one for the renewals (the thousands of leases a
// takeover won fall due together a RenewInterval later), a fourth
// for its electors' machines (see processGates.machines) and a fifth for
// their notifications (processGates.notices). A renewal waits
// only behind renewals: no lease waits behind a leave or a join, and the
// lock sends renewals a round trip at a time, in order, gate or not. An
// attempt or a renewal whose deadline passed while it waited is not sent
// (see loop.startBounded), so it waits at most about as long as the calls
// ahead of it take. A call that never returns holds its slot, as it held
// its goroutine.
type callGate struct {
	limit int

	mu      sync.Mutex
	running int      // goroutines running calls
	queue   []func() // waiting calls; queue[head:] are live
	head    int
}

// processGates are a Process's gates: one for its electors' acquisition
// attempts, one for their subscriptions and one for their renewals, apart
// so that subscriptions a slow server holds up never hold attempts back,
// and neither holds a renewal back; one for their machines and one for
// their notifications.
type processGates struct {
	acquire, watch, renew *callGate
	// machines runs the machines that a message from outside (an event,
	// Start, Stop, a resign) finds idle: a burst of events (a takeover
	// or a join announces thousands of releases and acquisitions at
	// once) would otherwise start a goroutine per elector. A machine does
	// no I/O and waits for nothing but short locks, so a few run at once
	// keep the cores busy. The clock's wakes and the calls' outcomes run
	// their machines on their own goroutines, as before.
	machines *callGate
	// notices runs the electors' deliveries of OnChange and OnNewLeader:
	// a leave (or a takeover) changes thousands of roles at once, and
	// each change would otherwise start a goroutine of its own to deliver
	// it (5,400 of them at once, 10.8 MB of stacks, in a leave of 20,000
	// roles). An elector's notifications still reach its subscribers one
	// at a time and in order; a subscriber that blocks holds one of the
	// gate's noticesAtOnce goroutines, and the other electors'
	// notifications wait only once that many block at once.
	notices *callGate
}

// machinesAtOnce is how many of a Process's machines its machines gate
// runs at once.
const machinesAtOnce = 64

// noticesAtOnce is how many of a Process's electors deliver their
// notifications at once (see processGates.notices): enough that a few
// slow subscribers never hold up the others, few enough that a burst of
// changes costs kilobytes of stacks, not megabytes.
const noticesAtOnce = 256

// newProcessGates returns a Process's gates.
func newProcessGates() processGates {
	return processGates{
		acquire:  newCallGate(callsInFlight),
		watch:    newCallGate(callsInFlight),
		renew:    newCallGate(callsInFlight),
		machines: newCallGate(machinesAtOnce),
		notices:  newCallGate(noticesAtOnce),
	}
}

// newCallGate returns a gate of limit calls in flight (at least one).
func newCallGate(limit int) *callGate { return &callGate{limit: max(limit, 1)} }

// spawn runs fn on a goroutine of the gate's, now if fewer than limit
// run, else after the calls queued before it.
func (g *callGate) spawn(fn func()) {
	g.mu.Lock()
	if g.running < g.limit {
		g.running++
		g.mu.Unlock()
		go g.work(fn)
		return
	}
	g.queue = append(g.queue, fn)
	g.mu.Unlock()
}

// work runs fn, then the queued calls, until none waits.
func (g *callGate) work(fn func()) {
	for fn != nil {
		fn()
		g.mu.Lock()
		if g.head < len(g.queue) {
			fn = g.queue[g.head]
			g.queue[g.head] = nil
			g.head++
		} else {
			fn = nil
			g.running--
			g.queue, g.head = g.queue[:0], 0
			if cap(g.queue) > keptQueue {
				// A burst's queue (50,000 roles' calls) is let go, not
				// kept for the process's life.
				g.queue = nil
			}
		}
		g.mu.Unlock()
	}
}

// each runs fn for every index of is through the gate and waits for them.
func (g *callGate) each(is []int, fn func(int)) {
	var wg sync.WaitGroup
	wg.Add(len(is))
	for _, i := range is {
		g.spawn(func() {
			defer wg.Done()
			fn(i)
		})
	}
	wg.Wait()
}
