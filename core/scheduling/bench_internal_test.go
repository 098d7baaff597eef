package scheduling

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// benchScheduler returns a started scheduler whose loop never ticks on its
// own: the benchmark drives tick through the loop (tickNow).
func benchScheduler(b *testing.B, leader bool, opts ...Option) (*Scheduler, *leadershiptest.Fake) {
	b.Helper()
	f := leadershiptest.NewFake("bench")
	f.SetLeader(leader)
	s, err := New(f, opts...)
	if err != nil {
		b.Fatal(err)
	}
	s.state = stateStarted
	go s.loop(false)
	b.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return s, f
}

// due makes every job due at slot: a distinct slot per call (the slot
// store refuses a slot it recorded), in the past.
func (s *Scheduler) due(slot time.Time) {
	s.ask(func() {
		for _, j := range s.order {
			j.next = slot
		}
	})
}

// tickNow runs one tick on the loop.
func (s *Scheduler) tickNow() {
	s.ask(func() { s.tick() })
}

// sparse is a schedule that is not Every, with slots 1000h apart, so the
// latest due slot is the one due set.
type sparse struct{}

func (sparse) Next(t time.Time) time.Time { return t.Add(1000 * time.Hour) }
func (sparse) String() string             { return "sparse" }

func (s *Scheduler) busy() bool {
	var busy bool
	s.ask(func() { busy = s.chains > 0 })
	return busy
}

func nop(context.Context) error { return nil }

// BenchmarkRun measures the scheduler's overhead per run: from a due slot
// to the run's bookkeeping done, against the bare minimum of running the
// same function on its own goroutine with a cancellable context.
func BenchmarkRun(b *testing.B) {
	b.Run("baseline-goroutine", func(b *testing.B) {
		tok := context.Background()
		var active atomic.Int32
		b.ReportAllocs()
		for b.Loop() {
			active.Add(1)
			go func() {
				defer active.Add(-1)
				ctx, cancel := context.WithCancel(tok)
				defer cancel()
				_ = nop(ctx)
			}()
			for active.Load() > 0 {
				runtime.Gosched()
			}
		}
	})
	for _, bc := range []struct {
		name string
		opts func(b *testing.B) []Option
	}{
		{"scheduler", func(*testing.B) []Option { return nil }},
		{"scheduler-memlock-slot-store", func(b *testing.B) []Option {
			l, err := memlock.NewLock(locking.DefaultOptions())
			if err != nil {
				b.Fatal(err)
			}
			return []Option{WithSlotStore(l)}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, _ := benchScheduler(b, true, bc.opts(b)...)
			if err := s.Add(Job{Name: "j", Schedule: sparse{}, Run: nop}); err != nil {
				b.Fatal(err)
			}
			slot := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
			b.ReportAllocs()
			for b.Loop() {
				slot = slot.Add(time.Millisecond)
				s.due(slot)
				s.tickNow()
				for s.busy() {
					runtime.Gosched()
				}
			}
			if info := s.Jobs()[0]; info.LastOutcome != Success || !info.LastSlot.Equal(slot) {
				b.Fatalf("job = %+v, want the last slot %v run", info, slot)
			}
		})
	}
}

// inUse returns the live heap plus goroutine stacks after a collection.
func inUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

const manyJobs = 10_000

// BenchmarkJobs10000 measures what 10,000 idle jobs cost: live memory per
// job (heap and stacks) and goroutines, for a started scheduler (one loop goroutine, one
// timer) against a goroutine with its own time.Ticker per job. Each op
// builds, starts and stops the whole set.
func BenchmarkJobs10000(b *testing.B) {
	b.Run("baseline-goroutine-per-job", func(b *testing.B) {
		for b.Loop() {
			g0, h0 := runtime.NumGoroutine(), inUse()
			quit := make(chan struct{})
			var wg sync.WaitGroup
			for i := range manyJobs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					t := time.NewTicker(time.Hour + time.Duration(i)*time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-t.C:
							_ = nop(context.Background())
						case <-quit:
							return
						}
					}
				}()
			}
			h1 := inUse()
			b.ReportMetric(float64(h1-h0)/manyJobs, "B/job")
			b.ReportMetric(float64(runtime.NumGoroutine()-g0), "goroutines")
			close(quit)
			wg.Wait()
		}
	})
	b.Run("scheduler", func(b *testing.B) {
		for b.Loop() {
			g0, h0 := runtime.NumGoroutine(), inUse()
			f := leadershiptest.NewFake("bench")
			f.SetLeader(true)
			s, err := New(f)
			if err != nil {
				b.Fatal(err)
			}
			for i := range manyJobs {
				if err := s.Add(Job{Name: fmt.Sprintf("job-%05d", i), Schedule: Every(time.Hour + time.Duration(i)*time.Millisecond), Run: nop}); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			h1 := inUse()
			b.ReportMetric(float64(h1-h0)/manyJobs, "B/job")
			b.ReportMetric(float64(runtime.NumGoroutine()-g0), "goroutines")
			if err := s.Stop(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTick10000Due measures one tick over 10,000 jobs due at once:
// as a follower (each slot counted as skipped) and as the leader (each
// slot launched and run).
func BenchmarkTick10000Due(b *testing.B) {
	for _, leader := range []bool{false, true} {
		name := "follower"
		if leader {
			name = "leader"
		}
		b.Run(name, func(b *testing.B) {
			s, _ := benchScheduler(b, leader)
			for i := range manyJobs {
				if err := s.Add(Job{Name: fmt.Sprintf("job-%05d", i), Schedule: sparse{}, Run: nop}); err != nil {
					b.Fatal(err)
				}
			}
			slot := time.Now().Add(-time.Hour)
			b.ReportAllocs()
			for b.Loop() {
				slot = slot.Add(time.Millisecond)
				s.due(slot)
				s.tickNow()
				for s.busy() {
					runtime.Gosched()
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/manyJobs, "ns/job")
		})
	}
}
