package leadership

import "sync"

// leaveCallsInFlight is how many of a leave's lock calls run at once (two
// of redislock's pipelined round trips' worth). A process leaving 50,000
// roles makes about 100,000 calls (releases, deregistrations, the ends
// of subscriptions); the lock sends them a round trip at a time whatever
// their number, so those past the bound wait as a closure of a few dozen
// bytes rather than as a goroutine blocked in the lock, whose stack holds
// 4-8 KB.
const leaveCallsInFlight = 2048

// callGate runs the lock calls of one leave (StopAll, Process.Leave) with
// at most limit of them in flight; the others wait their turn, first come
// first run, and each finished call's goroutine runs the next one. Only
// calls nobody's lease depends on go through it (releases,
// deregistrations, unsubscriptions): renewals and acquisitions never
// wait behind a leave. A call that never returns holds its slot, as it
// held its goroutine; the lock calls a leave makes end with their
// contexts.
type callGate struct {
	limit int

	mu      sync.Mutex
	running int      // goroutines running calls
	queue   []func() // waiting calls; queue[head:] are live
	head    int
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
