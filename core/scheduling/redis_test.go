package scheduling_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// redisStore returns a slot store over a private redis-server (no
// persistence), with namespace billing.
func redisStore(t *testing.T, srv *redistest.Server) *locking.DistributedLock {
	t.Helper()
	o := locking.DefaultOptions()
	o.Namespace = "billing"
	lock, err := redislock.NewLock(srv.Client(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Close() })
	return lock
}

// TestScheduler_L8_Redis covers the slot records over a real redis-server:
// two replicas that both believe they lead never run a slot twice; a
// leader that starts after an unstarted slot within the window runs it
// once, and a second one does not; and when Redis loses the record (a
// restart without persistence) the slot runs again, as documented.
func TestScheduler_L8_Redis(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	store := redisStore(t, srv)
	ctx := context.Background()

	t.Run("split brain runs each slot once", func(t *testing.T) {
		var mu sync.Mutex
		ran := make(map[int64][]string)
		var replicas []*scheduling.Scheduler
		for _, id := range []string{"a", "b"} {
			f := leadershiptest.NewFake("billing")
			f.SetLeader(true)
			s, err := scheduling.New(f, scheduling.WithSlotStore(store), scheduling.WithMisfireWindow(0))
			if err != nil {
				t.Fatal(err)
			}
			replicas = append(replicas, s)
			self := s
			mustAdd(t, s, scheduling.Job{Name: "split", Schedule: scheduling.Every(50 * time.Millisecond), Run: func(context.Context) error {
				slot := self.Jobs()[0].LastSlot.UnixMilli()
				mu.Lock()
				ran[slot] = append(ran[slot], id)
				mu.Unlock()
				return nil
			}})
		}
		for _, s := range replicas {
			mustStart(t, s)
		}
		time.Sleep(time.Second)
		for _, s := range replicas {
			if err := s.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		var latest int64
		for slot, ids := range ran {
			if len(ids) > 1 {
				t.Errorf("slot %d ran %d times: %v", slot, len(ids), ids)
			}
			latest = max(latest, slot)
		}
		if len(ran) < 5 {
			t.Errorf("%d slots ran in 1s of 50ms slots", len(ran))
		}
		// The record lives under the lock's namespace, in the job's hash.
		v, err := client.HGet(ctx, "billing:jobs:sched:billing:split", "slot").Int64()
		if err != nil || v != latest {
			t.Errorf("redis record = %d, %v; want the latest slot %d", v, err, latest)
		}
	})

	// An hourly job whose previous slot is within a two-hour window.
	prev := time.Now().Truncate(time.Hour)
	seedSlot(t, store, "sched:billing:hourly", prev.Add(-time.Hour))
	catchUp := func(t *testing.T) (ran bool) {
		t.Helper()
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		core, logs := observer.New(zap.DebugLevel)
		s, err := scheduling.New(f, scheduling.WithSlotStore(store), scheduling.WithMisfireWindow(2*time.Hour), scheduling.WithLogger(zap.New(core)))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{}, 1)
		mustAdd(t, s, scheduling.Job{Name: "hourly", Schedule: scheduling.Every(time.Hour), Run: func(context.Context) error {
			done <- struct{}{}
			return nil
		}})
		mustStart(t, s)
		defer func() {
			if err := s.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}()
		// The catch-up either runs the slot or learns from Redis that it
		// was started.
		deadline := time.Now().Add(10 * time.Second)
		for {
			select {
			case <-done:
				if got := s.Jobs()[0].LastSlot; !got.Equal(prev) {
					t.Errorf("ran slot %v, want %v", got, prev)
				}
				return true
			default:
			}
			if logs.FilterMessage("SchedulerSlotStartedElsewhere").Len() > 0 {
				return false
			}
			if time.Now().After(deadline) {
				t.Fatal("the catch-up neither ran nor was refused")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.Run("a new leader catches up an unstarted slot once", func(t *testing.T) {
		if !catchUp(t) {
			t.Fatal("the first leader did not run the unstarted slot")
		}
		if catchUp(t) {
			t.Fatal("a second leader ran the slot again")
		}
	})
	t.Run("a lost record lets the slot run again", func(t *testing.T) {
		srv.Restart(t) // no persistence: the record is gone
		deadline := time.Now().Add(5 * time.Second)
		for {
			if err := client.Ping(ctx).Err(); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("redis did not come back")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if st, err := store.JobStatus(ctx, "sched:billing:hourly"); err != nil || st.HasSlot {
			ok := st.HasSlot
			t.Fatalf("record after restart: %v %v", ok, err)
		}
		if !catchUp(t) {
			t.Fatal("with the record lost, a new leader did not run the slot")
		}
	})
}
