package leadership_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
)

// chanItem identifies a write: its producer and that producer's sequence
// number.
type chanItem struct {
	producer int
	seq      int
}

// chanModel is a reference implementation of the channel's rules for one
// goroutine driving a synchronous Fake.
type chanModel struct {
	capacity int
	mode     leadership.FullMode
	drain    bool
	leader   bool
	closed   bool
	buf      []chanItem
	drops    map[string]int64
}

// write returns whether the model accepts it.
func (m *chanModel) write(it chanItem) bool {
	switch {
	case m.closed:
		return false
	case !m.leader:
		m.drops["follower"]++
		return true
	case len(m.buf) < m.capacity:
		m.buf = append(m.buf, it)
		return true
	}
	switch m.mode {
	case leadership.DropWrite:
	case leadership.DropNewest:
		m.buf[len(m.buf)-1] = it
	case leadership.DropOldest:
		m.buf = append(m.buf[1:], it)
	default:
		return false
	}
	m.drops["full"]++
	return true
}

func (m *chanModel) flip() {
	if m.closed {
		return // unsubscribed: nothing observable changes
	}
	m.leader = !m.leader
	if !m.leader && m.drain {
		m.drops["loss"] += int64(len(m.buf))
		m.buf = nil
	}
}

// For any sequence of writes, reads, leadership flips and a close, drawn
// from a seeded generator, the channel behaves as the model, and:
// delivered ⊆ written while leader, each producer's order is kept, and
// delivered + buffered + counted drops = accepted writes (C1, C2, C4, C6).
func TestChannel_Property_RandomInterleavings(t *testing.T) {
	modes := []leadership.FullMode{leadership.Wait, leadership.DropWrite, leadership.DropNewest, leadership.DropOldest}
	for seed := uint64(1); seed <= 400; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		capacity := 1 + rng.IntN(5)
		mode := modes[rng.IntN(len(modes))]
		drain := rng.IntN(2) == 0
		if !chanRunProperty(t, seed, rng, capacity, mode, drain) {
			t.Fatalf("seed %d (capacity %d, mode %v, drain %v) failed", seed, capacity, mode, drain)
		}
	}
}

func chanRunProperty(t *testing.T, seed uint64, rng *rand.Rand, capacity int, mode leadership.FullMode, drain bool) bool {
	t.Helper()
	fake := leadershiptest.NewFake("r")
	tel := newChanTelemetry()
	o := leadership.ChannelOptions{Capacity: capacity, FullMode: mode, DrainOnLoss: drain}
	c, err := leadership.NewChannel[chanItem]("prop", fake, o, tel.opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := &chanModel{capacity: capacity, mode: mode, drain: drain, drops: map[string]int64{}}
	const producers = 3
	next := [producers]int{}
	writtenWhileLeader := map[chanItem]bool{}
	var accepted int64
	var delivered []chanItem
	ended, cancel := context.WithCancel(context.Background())
	cancel() // writes and reads never wait in this single-goroutine test

	fail := func(step int, format string, args ...any) bool {
		t.Helper()
		t.Errorf("seed %d step %d: "+format, append([]any{seed, step}, args...)...)
		return false
	}
	steps := 100 + rng.IntN(300)
	for step := range steps {
		switch op := rng.IntN(100); {
		case op < 45: // write
			p := rng.IntN(producers)
			it := chanItem{p, next[p]}
			next[p]++
			wantOK := m.write(it)
			var gotOK bool
			if rng.IntN(2) == 0 {
				gotOK = c.TryWrite(it)
			} else {
				err := c.Write(ended, it)
				gotOK = err == nil
				switch {
				case m.closed && !errors.Is(err, leadership.ErrChannelClosed):
					return fail(step, "Write after Close = %v, want ErrChannelClosed", err)
				case !m.closed && !wantOK && !errors.Is(err, context.Canceled):
					return fail(step, "Write on full = %v, want context.Canceled", err)
				}
			}
			if gotOK != wantOK {
				return fail(step, "write %v accepted = %v, model %v", it, gotOK, wantOK)
			}
			if gotOK {
				accepted++
				if m.leader {
					writtenWhileLeader[it] = true
				}
			}
		case op < 80: // read
			var want chanItem
			wantOK := len(m.buf) > 0
			if wantOK {
				want, m.buf = m.buf[0], m.buf[1:]
			}
			var got chanItem
			var gotOK bool
			if rng.IntN(2) == 0 {
				got, gotOK = c.TryRead()
			} else {
				var err error
				got, err = c.Read(ended)
				gotOK = err == nil
				switch {
				case !wantOK && m.closed && !errors.Is(err, leadership.ErrChannelClosed):
					return fail(step, "Read of drained closed channel = %v, want ErrChannelClosed", err)
				case !wantOK && !m.closed && !errors.Is(err, context.Canceled):
					return fail(step, "Read of empty channel = %v, want context.Canceled", err)
				}
			}
			if gotOK != wantOK || got != want {
				return fail(step, "read = %v, %v; model %v, %v", got, gotOK, want, wantOK)
			}
			if gotOK {
				delivered = append(delivered, got)
			}
		case op < 93: // leadership flip
			m.flip()
			fake.SetLeader(!fake.IsLeader())
		case op < 96: // readiness
			want := !m.closed && (!m.leader || mode != leadership.Wait || len(m.buf) < capacity)
			ok, err := c.WaitToWrite(ended)
			if ok != want {
				return fail(step, "WaitToWrite = %v, %v; model %v", ok, err, want)
			}
		default: // close, rarely
			if rng.IntN(4) == 0 {
				c.Close()
				m.closed = true
			}
		}
		if c.Len() != len(m.buf) {
			return fail(step, "Len = %d, model %d", c.Len(), len(m.buf))
		}
	}

	// Invariants, independent of the model.
	last := map[int]int{}
	for _, it := range delivered {
		if !writtenWhileLeader[it] {
			return fail(steps, "delivered %v was not written while leader", it)
		}
		if prev, ok := last[it.producer]; ok && it.seq <= prev {
			return fail(steps, "producer %d delivered %d after %d", it.producer, it.seq, prev)
		}
		last[it.producer] = it.seq
	}
	drops := tel.drops(t, "prop")
	var dropped int64
	for reason, n := range drops {
		if n != m.drops[reason] {
			return fail(steps, "drops[%s] = %d, model %d", reason, n, m.drops[reason])
		}
		dropped += n
	}
	if got := int64(len(delivered)) + int64(c.Len()) + dropped; got != accepted {
		return fail(steps, "delivered %d + buffered %d + dropped %d = %d, want accepted %d",
			len(delivered), c.Len(), dropped, got, accepted)
	}
	return true
}

// Many producers and readers race with leadership flips and a close. The
// leadership epoch is odd while the fake (possibly) leads; an item written
// entirely inside an even epoch must never be delivered. Each reader sees
// each producer's items in order, and delivered + counted drops = accepted
// writes once the channel is drained.
func TestChannel_ConcurrentProducersReadersFlips(t *testing.T) {
	modes := []leadership.FullMode{leadership.Wait, leadership.DropWrite, leadership.DropNewest, leadership.DropOldest}
	for _, mode := range modes {
		for _, drain := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/drain=%v", mode, drain), func(t *testing.T) {
				chanRunConcurrent(t, mode, drain)
			})
		}
	}
}

type chanStamped struct {
	producer, seq int
	epoch         uint64 // leadership epoch read before the write
}

func chanRunConcurrent(t *testing.T, mode leadership.FullMode, drain bool) {
	const (
		producers = 6
		readers   = 3
		perWriter = 400
		flips     = 60 // at least; the flipper runs until the producers end
	)
	fake := leadershiptest.NewFake("r")
	tel := newChanTelemetry()
	o := leadership.ChannelOptions{Capacity: 4, FullMode: mode, DrainOnLoss: drain}
	c, err := leadership.NewChannel[chanStamped]("conc", fake, o, tel.opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// epoch is odd from just before SetLeader(true) until just after
	// SetLeader(false): a superset of the time the fake leads.
	var epoch atomic.Uint64
	var accepted atomic.Int64
	var mu sync.Mutex
	after := map[[2]int]uint64{}

	var producersWG sync.WaitGroup
	for p := range producers {
		producersWG.Go(func() {
			for seq := range perWriter {
				before := epoch.Load()
				it := chanStamped{p, seq, before}
				var ok bool
				if seq%3 == 0 {
					ok = c.TryWrite(it)
				} else {
					err := c.Write(ctx, it)
					if err != nil && !errors.Is(err, leadership.ErrChannelClosed) {
						t.Errorf("Write = %v", err)
					}
					ok = err == nil
				}
				a := epoch.Load()
				mu.Lock()
				after[[2]int{p, seq}] = a
				mu.Unlock()
				if ok {
					accepted.Add(1)
				}
				if seq%5 == 0 {
					runtime.Gosched()
				}
			}
		})
	}
	var readersWG sync.WaitGroup
	got := make([][]chanStamped, readers)
	for r := range readers {
		readersWG.Go(func() {
			for v := range c.All(ctx) {
				got[r] = append(got[r], v)
			}
		})
	}
	var stop atomic.Bool
	var flipperWG sync.WaitGroup
	flipperWG.Go(func() {
		for i := 0; i < flips || !stop.Load(); i++ {
			if i%2 == 0 {
				epoch.Add(1) // odd
				fake.SetLeader(true)
			} else {
				fake.SetLeader(false)
				epoch.Add(1) // even
			}
			for range 5 {
				runtime.Gosched()
			}
		}
		if epoch.Load()%2 == 1 {
			fake.SetLeader(false)
			epoch.Add(1)
		}
	})
	producersWG.Wait()
	stop.Store(true)
	flipperWG.Wait()
	c.Close()
	readersWG.Wait()

	var delivered int64
	for r, items := range got {
		last := map[int]int{}
		for _, it := range items {
			delivered++
			a := after[[2]int{it.producer, it.seq}]
			if it.epoch == a && it.epoch%2 == 0 {
				t.Fatalf("reader %d got %+v, written entirely while following (epoch %d)", r, it, a)
			}
			if prev, ok := last[it.producer]; ok && it.seq <= prev {
				t.Fatalf("reader %d: producer %d item %d after %d", r, it.producer, it.seq, prev)
			}
			last[it.producer] = it.seq
		}
	}
	var dropped int64
	for _, n := range tel.drops(t, "conc") {
		dropped += n
	}
	if c.Len() != 0 {
		t.Fatalf("Len after drain = %d", c.Len())
	}
	if delivered+dropped != accepted.Load() {
		t.Fatalf("delivered %d + dropped %d != accepted %d", delivered, dropped, accepted.Load())
	}
	if delivered == 0 {
		t.Fatalf("nothing delivered: the test did not exercise the leader path")
	}
	t.Logf("accepted %d, delivered %d, dropped %d", accepted.Load(), delivered, dropped)
}
