package leadership

import (
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// TestInbox_QueueOnlyWaitsForTheNextItem: an item queued without a
// consumer starts none; it is handled, in order, before the next item
// put or run.
func TestInbox_QueueOnlyWaitsForTheNextItem(t *testing.T) {
	var got []int
	var b inbox[int]
	b.handle = func(x int) { got = append(got, x) }
	b.queueOnly(1)
	b.queueOnly(2)
	if len(got) != 0 {
		t.Fatalf("handled %v before any item was put", got)
	}
	select {
	case <-b.waitIdle():
	default:
		t.Fatal("a consumer runs for items only queued")
	}
	b.run(3) // consumes on this goroutine
	if want := []int{1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("handled %v, want %v", got, want)
	}
}

// TestInbox_H1_MachinesOfAProcessRunThroughItsGate: a burst of messages
// to 5,000 idle machines of one Process (a takeover's events) runs them
// on at most machinesAtOnce goroutines, each machine's messages in
// order, every one handled.
func TestInbox_H1_MachinesOfAProcessRunThroughItsGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newProcessGates()
		const n = 5000
		var running, most atomic.Int64
		boxes := make([]*inbox[int], n)
		got := make([][]int, n)
		for i := range boxes {
			b := &inbox[int]{spawn: g.machines.spawn}
			b.handle = func(x int) {
				now := running.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				time.Sleep(time.Millisecond) // hold the goroutine, so every one running is counted
				got[i] = append(got[i], x)
				running.Add(-1)
			}
			boxes[i] = b
		}
		for _, b := range boxes {
			b.put(1)
			b.put(2)
		}
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		for i := range boxes {
			if want := []int{1, 2}; !slices.Equal(got[i], want) {
				t.Fatalf("machine %d handled %v, want %v", i, got[i], want)
			}
		}
		if most.Load() > machinesAtOnce {
			t.Fatalf("%d machines ran at once, want at most %d", most.Load(), machinesAtOnce)
		}
	})
}

// TestInbox_H1_ProcessElectorsUseTheMachinesGate: an elector a Process
// creates starts its machine through the process's gate; one of its own
// on a goroutine of its own.
func TestInbox_H1_ProcessElectorsUseTheMachinesGate(t *testing.T) {
	lock, err := locking.New(memlock.New(), locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProcess(lock, ProcessOptions{Identity: "a"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.Elector("billing", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if e.loop.inbox.spawn == nil {
		t.Fatal("a Process's elector starts its machine on a goroutine of its own")
	}
	own, err := NewElector("billing", lock, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if own.loop.inbox.spawn != nil {
		t.Fatal("an elector of its own starts its machine through a gate")
	}
}
