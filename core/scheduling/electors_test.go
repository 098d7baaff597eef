package scheduling_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/scheduling"
)

func newElector(t *testing.T, lock locking.Lock, id string) *leadership.Elector {
	t.Helper()
	e, err := leadership.NewElector("billing", lock, leadership.DefaultOptions(), leadership.WithIdentity(id))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(context.Background()); err != nil {
			t.Errorf("elector %s Stop: %v", id, err)
		}
	})
	return e
}

// TestScheduler_S1_L8_TwoReplicasOverRealElectors runs one job on two
// replicas whose electors share a memlock lock (also the slot store), and
// moves leadership every 2m37s with Resign, often while a run is going.
// Recorded runs never overlap across replicas and every slot runs once.
func TestScheduler_S1_L8_TwoReplicasOverRealElectors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		lock := newStore(t)
		ea := newElector(t, lock, "a")
		synctest.Wait() // a leads
		eb := newElector(t, lock, "b")
		var rec recorder
		electors := map[string]*leadership.Elector{"a": ea, "b": eb}
		for _, id := range []string{"a", "b"} {
			s := newScheduler(t, electors[id], scheduling.WithSlotStore(lock))
			mustAdd(t, s, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: rec.job(id, 45*time.Second)})
			mustStart(t, s)
		}
		if !ea.IsLeader() || eb.IsLeader() {
			t.Fatalf("leaders a=%v b=%v, want a", ea.IsLeader(), eb.IsLeader())
		}

		const handovers = 11
		for range handovers {
			time.Sleep(157 * time.Second)
			for _, e := range electors {
				if e.IsLeader() {
					if err := e.Resign(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		end := time.Since(t0)
		time.Sleep(time.Minute) // let the last runs finish
		for _, e := range electors {
			if err := e.Resign(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()

		runs := rec.snapshot()
		noOverlap(t, runs)
		got := reduce(t0, runs, time.Minute)
		onceEach(t, got)
		ran := make(map[time.Duration]bool)
		perReplica := make(map[string]int)
		cut := 0
		for i, r := range got {
			ran[r.slot] = true
			perReplica[r.replica]++
			if errors.Is(runs[i].err, context.Canceled) {
				cut++
			}
		}
		for slot := time.Minute; slot < end; slot += time.Minute {
			if !ran[slot] {
				t.Errorf("slot %v never ran", slot)
			}
		}
		if perReplica["a"] == 0 || perReplica["b"] == 0 {
			t.Errorf("runs per replica = %v, want both", perReplica)
		}
		if cut == 0 {
			t.Error("no run was cut by a handover; the test does not move leadership mid-run")
		}
		t.Logf("%d runs over %v, per replica %v, %d cut by a handover", len(got), end, perReplica, cut)
	})
}
