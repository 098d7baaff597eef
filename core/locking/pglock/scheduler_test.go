package pglock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/scheduling"
)

func newScheduler(t *testing.T, f *leadershiptest.Fake, store *locking.DistributedLock, id string, jobs ...scheduling.Job) *scheduling.Scheduler {
	t.Helper()
	s, err := scheduling.New(f, scheduling.WithSlotStore(store), scheduling.WithIdentity(id), scheduling.WithMisfireWindow(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if err := s.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return s
}

// S1, L8, D4: two replicas that both believe they lead (split brain)
// never run a slot twice: the slot is claimed in PostgreSQL.
func TestScheduler_D4_SplitBrainRunsEachSlotOnce(t *testing.T) {
	pool := newDB(t)
	var mu sync.Mutex
	ran := make(map[time.Time][]string)
	var schedulers []*scheduling.Scheduler
	for _, id := range []string{"a", "b"} {
		store, _ := newLock(t, pool, pglock.Options{}, "billing")
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		schedulers = append(schedulers, newScheduler(t, f, store, id, scheduling.Job{
			Name: "split", Schedule: scheduling.Every(50 * time.Millisecond),
			Run: func(ctx context.Context) error {
				slot, _ := scheduling.SlotFrom(ctx)
				mu.Lock()
				ran[slot] = append(ran[slot], id)
				mu.Unlock()
				return nil
			},
		}))
	}
	time.Sleep(time.Second)
	for _, s := range schedulers {
		if err := s.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for slot, ids := range ran {
		if len(ids) > 1 {
			t.Errorf("slot %v ran %d times: %v", slot, len(ids), ids)
		}
	}
	if len(ran) < 5 {
		t.Errorf("%d slots ran in 1s of 50ms slots", len(ran))
	}
}

// S9, D4: a's run of a slot is cut short when its term ends; b, leading
// next, runs the same slot again as attempt 2. The history, kept in
// PostgreSQL, shows both runs.
func TestScheduler_S9_D4_RecoverAfterTermEndedOverPostgres(t *testing.T) {
	pool := newDB(t)
	store, _ := newLock(t, pool, pglock.Options{}, "billing")
	type run struct {
		id      string
		slot    time.Time
		attempt int
	}
	runs := make(chan run, 16)
	job := func(id string) scheduling.Job {
		return scheduling.Job{
			Name: "sync", Schedule: scheduling.Every(time.Second), Recover: true,
			Run: func(ctx context.Context) error {
				slot, _ := scheduling.SlotFrom(ctx)
				attempt, _ := scheduling.AttemptFrom(ctx)
				runs <- run{id, slot, attempt}
				<-ctx.Done() // runs until its term ends
				return ctx.Err()
			},
		}
	}
	fa, fb := leadershiptest.NewFake("billing"), leadershiptest.NewFake("billing")
	fa.SetLeader(true)
	newScheduler(t, fa, store, "a", job("a"))
	b := newScheduler(t, fb, store, "b", job("b"))
	var first run
	select {
	case first = <-runs:
	case <-time.After(waitFor):
		t.Fatal("a ran nothing")
	}
	if first.id != "a" || first.attempt != 1 {
		t.Fatalf("first run %+v, want a's attempt 1", first)
	}
	fa.SetLeader(false)
	time.Sleep(100 * time.Millisecond) // a's run returns, cut short
	fb.SetLeader(true)
	var again run
	select {
	case again = <-runs:
	case <-time.After(waitFor):
		t.Fatal("b recovered nothing")
	}
	if again.id != "b" || again.attempt != 2 || !again.slot.Equal(first.slot) {
		t.Fatalf("b's first run %+v, want the recovery of %v as attempt 2", again, first.slot)
	}
	fb.SetLeader(false)
	time.Sleep(100 * time.Millisecond)
	h, err := b.History(context.Background(), "sync", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) < 2 || h[len(h)-1].Identity != "a" || h[len(h)-1].Attempt != 1 || h[len(h)-2].Identity != "b" || h[len(h)-2].Attempt != 2 {
		t.Fatalf("history = %+v, want a's attempt 1 then b's attempt 2 (oldest last)", h)
	}
	for _, r := range h[len(h)-2:] {
		if !r.Slot.Equal(first.slot) || r.Outcome != scheduling.Canceled {
			t.Fatalf("history record %+v, want slot %v cut short", r, first.slot)
		}
	}
}
