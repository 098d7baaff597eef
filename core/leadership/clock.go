package leadership

import (
	"container/heap"
	"sync"
	"sync/atomic"
	"time"
)

// wakeTimer is what an elector's machine needs of its timer: Reset arms
// it to run the machine once after d, replacing any earlier arming; Stop
// disarms it. *time.Timer (from time.AfterFunc) is one; a wake of a
// process's clock is the other.
type wakeTimer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// wakesPerGoroutine is how many electors that fall due at one instant a
// clock runs one after the other on one goroutine. An elector's machine
// only records what it does next and hands its lock calls to goroutines
// of their own, so a batch of 256 takes about a millisecond.
const wakesPerGoroutine = 256

// clockShards is how many heaps, each with its own lock and runtime
// timer, a clock spreads its wakes over. Every message an elector's
// machine takes re-arms its wake; with one lock for a process's 50,000
// electors, a burst of events (a takeover, a join) left about 2,000
// machines waiting for that lock at once, each on a goroutine of its own.
const clockShards = 16

// clock wakes the electors of one Process when they fall due, on a few
// runtime timers for the process (one per shard) instead of one each.
// Electors that fall due together (the leases a takeover won come up for
// renewal a RenewInterval later, all within a few milliseconds) are run
// in batches of wakesPerGoroutine per goroutine, where a timer each
// starts a goroutine each at that instant, and each of those goroutines
// starts with a stack of a few kilobytes: 18,000 leases falling due at
// once held about 70 MB of stacks that way.
type clock struct {
	shards [clockShards]clockShard
	n      atomic.Uint32 // wakes made, to spread them over the shards
}

// clockShard is one heap of a clock's wakes, with its lock and timer.
type clockShard struct {
	mu    sync.Mutex
	due   wakeHeap    // armed wakes, the earliest first
	timer *time.Timer // fires at next, runs fire
	next  time.Time   // when timer fires; zero: not armed
}

// wake is one elector's timer on a clock.
type wake struct {
	c   *clockShard
	run func()    // runs the elector's machine (msgTimer)
	at  time.Time // when it falls due, while armed
	i   int       // its index in c.due; -1 when not armed
}

func newClock() *clock {
	c := &clock{}
	for i := range c.shards {
		s := &c.shards[i]
		s.timer = time.AfterFunc(MaxWait, s.fire)
		s.timer.Stop()
	}
	return c
}

// newWake returns a disarmed wake that calls run when it falls due.
func (c *clock) newWake(run func()) *wake {
	s := &c.shards[c.n.Add(1)%clockShards]
	return &wake{c: s, run: run, i: -1}
}

// Reset arms w to fall due after d, replacing any earlier arming. It
// reports whether w was armed.
func (w *wake) Reset(d time.Duration) bool {
	c := w.c
	now := time.Now()
	at := now.Add(d)
	c.mu.Lock()
	defer c.mu.Unlock()
	w.at = at
	armed := w.i >= 0
	if armed {
		heap.Fix(&c.due, w.i)
	} else {
		heap.Push(&c.due, w)
	}
	if c.next.IsZero() || at.Before(c.next) {
		c.next = at
		c.timer.Reset(max(d, 0))
	}
	return armed
}

// Stop disarms w. It reports whether w was armed. The clock's timer stays
// armed: a firing with nothing due only arms it again.
func (w *wake) Stop() bool {
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.i < 0 {
		return false
	}
	heap.Remove(&c.due, w.i)
	return true
}

// fire runs the wakes that have fallen due, then arms the timer for the
// next one.
func (c *clockShard) fire() {
	now := time.Now()
	c.mu.Lock()
	var ready []*wake
	for len(c.due) > 0 && !c.due[0].at.After(now) {
		ready = append(ready, heap.Pop(&c.due).(*wake))
	}
	c.next = time.Time{}
	if len(c.due) > 0 {
		c.next = c.due[0].at
		c.timer.Reset(max(c.next.Sub(now), 0))
	}
	c.mu.Unlock()
	for len(ready) > wakesPerGoroutine {
		batch := ready[:wakesPerGoroutine]
		ready = ready[wakesPerGoroutine:]
		go runWakes(batch)
	}
	runWakes(ready)
}

// runWakes runs the machines of ws, one after the other.
func runWakes(ws []*wake) {
	for _, w := range ws {
		w.run()
	}
}

// wakeHeap orders armed wakes by when they fall due (container/heap).
type wakeHeap []*wake

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h wakeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}

func (h *wakeHeap) Push(x any) {
	w := x.(*wake)
	w.i = len(*h)
	*h = append(*h, w)
}

func (h *wakeHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.i = -1
	return w
}
