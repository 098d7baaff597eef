package leadership

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestClock_H1_WakesRunWhenDue: a wake runs once, when it falls due; a
// Reset moves it, a Stop disarms it, and wakes run in the order they
// fall due.
func TestClock_H1_WakesRunWhenDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClock()
		start := time.Now()
		var mu sync.Mutex
		var got []string
		at := func(name string) func() {
			return func() {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, name+"@"+time.Since(start).String())
			}
		}
		a, b, s := c.newWake(at("a")), c.newWake(at("b")), c.newWake(at("stopped"))
		b.Reset(30 * time.Millisecond)
		a.Reset(50 * time.Millisecond)
		s.Reset(10 * time.Millisecond)
		if !s.Stop() || s.Stop() {
			t.Fatal("Stop does not report whether the wake was armed")
		}
		if !a.Reset(20 * time.Millisecond) {
			t.Fatal("Reset of an armed wake reports it was not armed")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		b.Reset(0)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		want := []string{"a@20ms", "b@30ms", "b@1s"}
		if len(got) != len(want) {
			t.Fatalf("wakes ran %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("wakes ran %v, want %v", got, want)
			}
		}
	})
}

// TestClock_H1_WakesDueTogetherShareGoroutines: 10,000 wakes that fall
// due at one instant run on a goroutine per wakesPerGoroutine of them in
// each of the clock's shards, not on one each (as a runtime timer each
// would run them).
func TestClock_H1_WakesDueTogetherShareGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newClock()
		const n = 10000
		var ran, running, most atomic.Int64
		for range n {
			w := c.newWake(func() {
				ran.Add(1)
				now := running.Add(1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				// Block, so that every goroutine running wakes is counted
				// at once.
				time.Sleep(time.Millisecond)
				running.Add(-1)
			})
			w.Reset(5 * time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if ran.Load() != n {
			t.Fatalf("%d of %d wakes ran", ran.Load(), n)
		}
		perShard := (n + clockShards - 1) / clockShards
		if limit := int64(clockShards * ((perShard + wakesPerGoroutine - 1) / wakesPerGoroutine)); most.Load() > limit {
			t.Fatalf("%d wakes ran at once, want at most %d goroutines' worth", most.Load(), limit)
		}
	})
}
