package scheduling_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// run is a recorded run reduced to what the slot tests compare.
type run struct {
	replica string
	slot    time.Duration // since t0
	start   time.Duration // since t0
}

func reduce(t0 time.Time, runs []interval, slot time.Duration) []run {
	out := make([]run, len(runs))
	for i, r := range runs {
		out[i] = run{replica: r.replica, slot: r.start.Truncate(slot).Sub(t0), start: r.start.Sub(t0)}
	}
	return out
}

func onceEach(t *testing.T, runs []run) {
	t.Helper()
	seen := make(map[time.Duration]string)
	for _, r := range runs {
		if prev, dup := seen[r.slot]; dup {
			t.Errorf("slot %v ran twice: on %s and on %s", r.slot, prev, r.replica)
		}
		seen[r.slot] = r.replica
	}
}

func equalRuns(t *testing.T, got, want []run) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("runs\n got %v\nwant %v", got, want)
	}
}

func m(n float64) time.Duration { return time.Duration(n * float64(time.Minute)) }

// TestScheduler_L8_HandoverRunsEachSlotOnce moves leadership between two
// replicas sharing a slot store, mid-run, with gaps shorter and longer than
// the misfire window.
func TestScheduler_L8_HandoverRunsEachSlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		store := newStore(t)
		ma, mb := newMeter(), newMeter()
		fa, fb := leadershiptest.NewFake("billing"), leadershiptest.NewFake("billing")
		a := newScheduler(t, fa, scheduling.WithSlotStore(store), scheduling.WithMeterProvider(ma.provider))
		b := newScheduler(t, fb, scheduling.WithSlotStore(store), scheduling.WithMeterProvider(mb.provider))
		var rec recorder
		mustAdd(t, a, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: rec.job("a", 20*time.Second)})
		mustAdd(t, b, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: rec.job("b", 20*time.Second)})
		fa.SetLeader(true)
		mustStart(t, a)
		mustStart(t, b)

		until := func(d time.Duration) {
			time.Sleep(time.Until(t0.Add(d)))
			synctest.Wait()
		}
		until(m(5) + 10*time.Second) // a runs slots 1-5; slot 5 is running
		fa.SetLeader(false)          // a's run of slot 5 is cancelled now
		fb.SetLeader(true)           // slot 5 is in b's window but recorded: not run again
		until(m(8.5))                // b runs 6, 7, 8
		fb.SetLeader(false)
		until(m(9) + 20*time.Second) // nobody leads at slot 9
		fa.SetLeader(true)           // slot 9 is within the window and unstarted: a runs it now
		until(m(10.5))
		fa.SetLeader(false)
		until(m(14.5)) // slots 11-13 pass with no leader
		fb.SetLeader(true)
		until(m(16.5))

		runs := rec.snapshot()
		noOverlap(t, runs)
		got := reduce(t0, runs, time.Minute)
		onceEach(t, got)
		equalRuns(t, got, []run{
			{"a", 0, 0}, // the slot at the start instant: a leads at Start and nobody started it
			{"a", m(1), m(1)}, {"a", m(2), m(2)}, {"a", m(3), m(3)}, {"a", m(4), m(4)}, {"a", m(5), m(5)},
			{"b", m(6), m(6)}, {"b", m(7), m(7)}, {"b", m(8), m(8)},
			{"a", m(9), m(9) + 20*time.Second}, {"a", m(10), m(10)},
			{"b", m(14), m(14.5)}, {"b", m(15), m(15)}, {"b", m(16), m(16)},
		})
		if !errors.Is(runs[5].err, context.Canceled) || runs[5].end.Sub(t0) != m(5)+10*time.Second {
			t.Errorf("slot 5 run = %+v, want cancelled at 5m10s", runs[5])
		}
		if n := mb.sum(t, scheduling.MetricMissed, job("sync")); n != 3 {
			t.Errorf("b missed = %d, want 3 (slots 11, 12, 13)", n)
		}
		if n := ma.sum(t, scheduling.MetricMissed, job("sync")); n != 0 {
			t.Errorf("a missed = %d, want 0", n)
		}
		if st, err := store.JobStatus(context.Background(), "sched:billing:sync"); err != nil || !st.HasSlot || st.Slot != t0.Add(m(16)).UnixMilli() {
			t.Errorf("slot record = %+v %v, want slot 16", st, err)
		}
	})
}

// TestScheduler_L8_SplitBrainRunsEachSlotOnce: both replicas believe they
// lead (no fencing); the slot store still lets one run per slot.
func TestScheduler_L8_SplitBrainRunsEachSlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		store := newStore(t)
		ma, mb := newMeter(), newMeter()
		fa, fb := leadershiptest.NewFake("billing"), leadershiptest.NewFake("billing")
		fa.SetLeader(true)
		fb.SetLeader(true)
		a := newScheduler(t, fa, scheduling.WithSlotStore(store), scheduling.WithMeterProvider(ma.provider))
		b := newScheduler(t, fb, scheduling.WithSlotStore(store), scheduling.WithMeterProvider(mb.provider))
		var rec recorder
		mustAdd(t, a, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: rec.job("a", time.Second)})
		mustAdd(t, b, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: rec.job("b", time.Second)})
		mustStart(t, a)
		mustStart(t, b)
		time.Sleep(m(10) + time.Second)
		synctest.Wait()
		got := reduce(t0, rec.snapshot(), time.Minute)
		onceEach(t, got)
		if len(got) != 11 {
			t.Errorf("%d runs, want 11 (one per slot, 0 to 10m): %v", len(got), got)
		}
		started := ma.sum(t, scheduling.MetricSkipped, reason(scheduling.SkipStarted)) + mb.sum(t, scheduling.MetricSkipped, reason(scheduling.SkipStarted))
		if started != 10 {
			t.Errorf("skipped as started = %d, want 10 (slots 1-10; slot 0 was a catch-up)", started)
		}
	})
}

// TestScheduler_L8_MisfireWindowAtStart: a leader that starts after a slot
// nobody started runs it once when it is within the window.
func TestScheduler_L8_MisfireWindowAtStart(t *testing.T) {
	for _, kind := range []string{"jobs", "state"} {
		t.Run(kind, func(t *testing.T) { misfireWindowAtStart(t, kind == "state") })
	}
}

func misfireWindowAtStart(t *testing.T, stateOnly bool) {
	for _, tt := range []struct {
		name   string
		window time.Duration
		want   []run
	}{
		{"within the window", time.Minute, []run{{"a", m(4), m(4) + 20*time.Second}, {"a", m(5), m(5)}}},
		{"window disabled", 0, []run{{"a", m(5), m(5)}}},
		{"slot older than the window", 10 * time.Second, []run{{"a", m(5), m(5)}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				lock := newStore(t)
				var store slotstore.State = lock
				if stateOnly {
					store = stateStore{lock}
					if _, _, err := store.Advance(context.Background(), "sched:billing:sync", t0.Add(m(2)).UnixMilli()); err != nil {
						t.Fatal(err)
					}
				} else {
					seedSlot(t, lock, "sched:billing:sync", t0.Add(m(2)))
				}
				mt := newMeter()
				f := leadershiptest.NewFake("billing")
				f.SetLeader(true)
				s := newScheduler(t, f, scheduling.WithSlotStore(store), scheduling.WithMisfireWindow(tt.window), scheduling.WithMeterProvider(mt.provider))
				var rec recorder
				mustAdd(t, s, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: rec.job("a", time.Second)})
				time.Sleep(m(4) + 20*time.Second)
				mustStart(t, s)
				time.Sleep(m(1))
				synctest.Wait()
				equalRuns(t, reduce(t0, rec.snapshot(), time.Minute), tt.want)
				// Slot 3 nobody started is missed either way; slot 4 too
				// when it was not caught up.
				wantMissed := int64(2)
				if len(tt.want) == 2 {
					wantMissed = 1
				}
				if n := mt.sum(t, scheduling.MetricMissed); n != wantMissed {
					t.Errorf("missed = %d, want %d", n, wantMissed)
				}
			})
		})
	}
}

// failingStore is a StateStore whose backend is down.
type failingStore struct{}

func (failingStore) Advance(context.Context, string, int64) (bool, int64, error) {
	return false, 0, errors.New("connection refused")
}
func (failingStore) State(context.Context, string) (int64, bool, error) {
	return 0, false, errors.New("connection refused")
}

var _ slotstore.State = failingStore{}

func TestScheduler_L8_StoreErrorSkipsTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mt := newMeter()
		core, logs := observer.New(zap.WarnLevel)
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		s := newScheduler(t, f, scheduling.WithSlotStore(failingStore{}), scheduling.WithMeterProvider(mt.provider), scheduling.WithLogger(zap.New(core)))
		var rec recorder
		mustAdd(t, s, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: rec.job("a", time.Second)})
		mustStart(t, s)
		time.Sleep(m(3) + time.Second)
		synctest.Wait()
		if n := len(rec.snapshot()); n != 0 {
			t.Errorf("%d runs without a slot claim", n)
		}
		// Slots 1-3, and slot 0, caught up at Start.
		if n := mt.sum(t, scheduling.MetricSkipped, reason(scheduling.SkipStoreError)); n != 4 {
			t.Errorf("skipped for store errors = %d, want 4", n)
		}
		if n := logs.FilterMessage("SchedulerSlotStoreFailed").Len(); n != 4 {
			t.Errorf("store failure logged %d times, want 4", n)
		}
	})
}

// TestScheduler_NoStoreDoesNotReplay: without a slot store a new leader
// does not run slots that fell due before it led.
func TestScheduler_NoStoreDoesNotReplay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		f := leadershiptest.NewFake("billing")
		s := newScheduler(t, f)
		var rec recorder
		mustAdd(t, s, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: rec.job("a", time.Second)})
		mustStart(t, s)
		time.Sleep(m(4) + 20*time.Second)
		f.SetLeader(true)
		time.Sleep(m(1))
		synctest.Wait()
		equalRuns(t, reduce(t0, rec.snapshot(), time.Minute), []run{{"a", m(5), m(5)}})
	})
}

func TestScheduler_Jitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		s := newScheduler(t, f, scheduling.WithSlotStore(newStore(t)))
		var rec recorder
		mustAdd(t, s, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Jitter: 30 * time.Second, Run: rec.job("a", time.Second)})
		mustStart(t, s)
		time.Sleep(m(20) + time.Minute)
		synctest.Wait()
		runs := rec.snapshot()
		if len(runs) != 21 {
			t.Fatalf("%d runs, want 21 (slots 0 to 20)", len(runs))
		}
		var delayed int
		for i, r := range runs {
			slot := t0.Add(m(float64(i)))
			d := r.start.Sub(slot)
			if d < 0 || d >= 30*time.Second {
				t.Errorf("run %d started %v after its slot, want within [0, 30s)", i, d)
			}
			if d > 0 {
				delayed++
			}
		}
		if delayed == 0 {
			t.Error("no run was delayed by the jitter")
		}
		if info := s.Jobs()[0]; !info.LastSlot.Equal(t0.Add(m(20))) {
			t.Errorf("LastSlot = %v, want the scheduled time, not the jittered one", info.LastSlot.Sub(t0))
		}
	})
}
