package scheduling_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// TestScheduler_S9_RecoverAfterTermEnded: a's run of slot 1 is cut short
// when a's term ends; b, leading next, runs slot 1 again as attempt 2,
// then the later slots as usual. The history shows all three runs.
func TestScheduler_S9_RecoverAfterTermEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &slotRecorder{t0: time.Now()}
		store := newStore(t)
		fa, fb := leadershiptest.NewFake("billing"), leadershiptest.NewFake("billing")
		a := newScheduler(t, fa, scheduling.WithSlotStore(store), scheduling.WithIdentity("a"), scheduling.WithMisfireWindow(0))
		b := newScheduler(t, fb, scheduling.WithSlotStore(store), scheduling.WithIdentity("b"), scheduling.WithMisfireWindow(0))
		mustAdd(t, a, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Recover: true, Run: rec.job("a", 30*time.Second)})
		mustAdd(t, b, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Recover: true, Run: rec.job("b", 30*time.Second)})
		fa.SetLeader(true)
		mustStart(t, a)
		mustStart(t, b)
		time.Sleep(m(1) + 10*time.Second)
		fa.SetLeader(false)
		time.Sleep(10 * time.Second)
		fb.SetLeader(true)
		time.Sleep(m(1) + 20*time.Second)
		synctest.Wait()
		if got, want := rec.String(), "[a:1m0s@1m0s! b:1m0s@1m20s#2 b:2m0s@2m0s]"; got != want {
			t.Errorf("runs\n got %s\nwant %s", got, want)
		}
		h, err := b.History(context.Background(), "sync", 10)
		if err != nil {
			t.Fatal(err)
		}
		t0 := rec.t0
		want := []scheduling.RunRecord{
			{Slot: t0.Add(m(2)), Started: t0.Add(m(2)), Ended: t0.Add(m(2) + 30*time.Second), Identity: "b", Outcome: scheduling.Success, Attempt: 1},
			{Slot: t0.Add(m(1)), Started: t0.Add(m(1) + 20*time.Second), Ended: t0.Add(m(1) + 50*time.Second), Identity: "b", Outcome: scheduling.Success, Attempt: 2},
			{Slot: t0.Add(m(1)), Started: t0.Add(m(1)), Ended: t0.Add(m(1) + 10*time.Second), Identity: "a", Outcome: scheduling.Canceled, Attempt: 1},
		}
		if len(h) != len(want) {
			t.Fatalf("history = %+v, want %d records", h, len(want))
		}
		for i := range want {
			g, w := h[i], want[i]
			if !g.Slot.Equal(w.Slot) || !g.Started.Equal(w.Started) || !g.Ended.Equal(w.Ended) || g.Identity != w.Identity || g.Outcome != w.Outcome || g.Attempt != w.Attempt || g.Fence != 0 {
				t.Errorf("history[%d] = %+v, want %+v", i, g, w)
			}
		}
	})
}

// TestScheduler_S9_RecoveryWaitsForTheTerm: a slot whose attempt never
// reported its end (its process died) is run again only when the
// claiming term has certainly ended: the recovery hold after its claim.
func TestScheduler_S9_RecoveryWaitsForTheTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &slotRecorder{t0: time.Now()}
		store := newStore(t)
		core, logs := observer.New(zap.InfoLevel)
		time.Sleep(m(1) + 2*time.Second)
		// The dead process claimed slot 1 at 1m2s, with a 15s lease.
		r, err := store.ClaimSlot(context.Background(), "sched:billing:sync", slotstore.SlotClaim{
			Slot: rec.t0.Add(m(1)).UnixMilli(), Attempt: 1, Term: "dead", Hold: 15 * time.Second, Record: "{}", TTL: time.Hour,
		})
		if err != nil || r.Status != slotstore.ClaimGranted {
			t.Fatalf("claim: %+v %v", r, err)
		}
		time.Sleep(3 * time.Second)
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		s := newScheduler(t, f, scheduling.WithSlotStore(store), scheduling.WithLogger(zap.New(core)))
		mustAdd(t, s, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Recover: true, Run: rec.job("b", time.Second)})
		mustStart(t, s)
		time.Sleep(m(1))
		synctest.Wait()
		if got, want := rec.String(), "[b:1m0s@1m17s#2 b:2m0s@2m0s]"; got != want {
			t.Errorf("runs\n got %s\nwant %s", got, want)
		}
		if n := logs.FilterMessage("SchedulerRecoveryWaits").Len(); n != 1 {
			t.Errorf("SchedulerRecoveryWaits logged %d times, want 1", n)
		}
		if n := logs.FilterMessage("SchedulerSlotRecovered").Len(); n != 1 {
			t.Errorf("SchedulerSlotRecovered logged %d times, want 1", n)
		}
	})
}

// TestScheduler_S9_AttemptsAreBounded: a slot whose third attempt did not
// finish is not run again.
func TestScheduler_S9_AttemptsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &slotRecorder{t0: time.Now()}
		store := newStore(t)
		time.Sleep(m(1))
		ctx := context.Background()
		slot := rec.t0.Add(m(1)).UnixMilli()
		for attempt := 1; attempt <= slotstore.MaxJobAttempts; attempt++ {
			r, err := store.ClaimSlot(ctx, "sched:billing:sync", slotstore.SlotClaim{
				Slot: slot, Attempt: attempt, Term: fmt.Sprint("dead", attempt), Record: "{}", TTL: time.Hour,
			})
			if err != nil || r.Status != slotstore.ClaimGranted {
				t.Fatalf("claim %d: %+v %v", attempt, r, err)
			}
		}
		time.Sleep(10 * time.Second)
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		s := newScheduler(t, f, scheduling.WithSlotStore(store))
		mustAdd(t, s, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Recover: true, Run: rec.job("b", time.Second)})
		mustStart(t, s)
		time.Sleep(m(1))
		synctest.Wait()
		if got, want := rec.String(), "[b:2m0s@2m0s]"; got != want {
			t.Errorf("runs\n got %s\nwant %s", got, want)
		}
	})
}

// TestScheduler_S9_RecoverNeedsJobStore: Add rejects Recover without a
// store that keeps job records, naming the job.
func TestScheduler_S9_RecoverNeedsJobStore(t *testing.T) {
	for name, opts := range map[string][]scheduling.Option{
		"no store":         nil,
		"state store only": {scheduling.WithSlotStore(stateStore{newStoreNoBubble(t)})},
	} {
		s := newScheduler(t, leadershiptest.NewFake("billing"), opts...)
		err := s.Add(scheduling.Job{Name: "invoices", Schedule: scheduling.Every(time.Minute), Run: nop, Recover: true})
		if err == nil || !strings.Contains(err.Error(), `"invoices"`) || !strings.Contains(err.Error(), "Recover") {
			t.Errorf("%s: Add = %v, want an error naming the job and Recover", name, err)
		}
	}
}

// TestScheduler_S10_PauseResume: a pause made on a follower stops the
// leader's runs at its next slot; paused slots are recorded as passed, so
// neither a new leader's catch-up nor Resume runs them.
func TestScheduler_S10_PauseResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &slotRecorder{t0: time.Now()}
		store := newStore(t)
		ma, mb := newMeter(), newMeter()
		fa, fb := leadershiptest.NewFake("billing"), leadershiptest.NewFake("billing")
		a := newScheduler(t, fa, scheduling.WithSlotStore(store), scheduling.WithMeterProvider(ma.provider))
		b := newScheduler(t, fb, scheduling.WithSlotStore(store), scheduling.WithMeterProvider(mb.provider))
		mustAdd(t, a, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: rec.job("a", time.Second)})
		mustAdd(t, b, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: rec.job("b", time.Second)})
		fa.SetLeader(true)
		mustStart(t, a)
		mustStart(t, b)
		ctx := context.Background()
		time.Sleep(m(2.5))
		if err := b.Pause(ctx, "sync"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(m(1))
		if !a.Jobs()[0].Paused || !b.Jobs()[0].Paused {
			t.Errorf("Paused: leader %v, pausing follower %v; want both true", a.Jobs()[0].Paused, b.Jobs()[0].Paused)
		}
		fa.SetLeader(false)
		time.Sleep(40 * time.Second)
		fb.SetLeader(true) // 4m10s: slot 4 is in b's window, but paused
		time.Sleep(20 * time.Second)
		if err := a.Resume(ctx, "sync"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(m(1))
		synctest.Wait()
		if got, want := rec.String(), "[a:0s@0s a:1m0s@1m0s a:2m0s@2m0s b:5m0s@5m0s]"; got != want {
			t.Errorf("runs\n got %s\nwant %s", got, want)
		}
		if na, nb := ma.sum(t, scheduling.MetricSkipped, reason(scheduling.SkipPaused)), mb.sum(t, scheduling.MetricSkipped, reason(scheduling.SkipPaused)); na != 1 || nb != 1 {
			t.Errorf("skipped paused: a %d, b %d; want 1 each (slots 3 and 4)", na, nb)
		}
		if b.Jobs()[0].Paused {
			t.Error("b still reports the job paused after its next claim")
		}
	})
}

// TestScheduler_S10_S11_BadInput: unknown jobs are errors naming them; a
// scheduler without job records returns ErrNoJobStore; n out of range is
// an error.
func TestScheduler_S10_S11_BadInput(t *testing.T) {
	ctx := context.Background()
	s := newScheduler(t, leadershiptest.NewFake("billing"), scheduling.WithSlotStore(newStoreNoBubble(t)))
	mustAdd(t, s, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: nop})
	for name, err := range map[string]error{
		"pause":   s.Pause(ctx, "nope"),
		"resume":  s.Resume(ctx, "nope"),
		"history": func() error { _, err := s.History(ctx, "nope", 5); return err }(),
	} {
		if err == nil || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("%s of an unknown job = %v, want an error naming it", name, err)
		}
	}
	for _, n := range []int{0, -3, 101} {
		if _, err := s.History(ctx, "sync", n); err == nil || !strings.Contains(err.Error(), fmt.Sprint("n ", n)) {
			t.Errorf("History(n=%d) = %v, want an error naming n", n, err)
		}
	}
	plain := newScheduler(t, leadershiptest.NewFake("billing"), scheduling.WithSlotStore(stateStore{newStoreNoBubble(t)}))
	mustAdd(t, plain, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: nop})
	if err := plain.Pause(ctx, "sync"); !errors.Is(err, scheduling.ErrNoJobStore) {
		t.Errorf("Pause without job records = %v, want ErrNoJobStore", err)
	}
	if _, err := plain.History(ctx, "sync", 5); !errors.Is(err, scheduling.ErrNoJobStore) {
		t.Errorf("History without job records = %v, want ErrNoJobStore", err)
	}
}

// TestScheduler_S11_UnparsableRecordSkippedAndLoggedOnce: a history record
// that does not parse is left out and logged once, never a panic.
func TestScheduler_S11_UnparsableRecordSkippedAndLoggedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newStore(t)
		core, logs := observer.New(zap.WarnLevel)
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		s := newScheduler(t, f, scheduling.WithSlotStore(store), scheduling.WithLogger(zap.New(core)), scheduling.WithIdentity("a"))
		mustAdd(t, s, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: nop})
		mustStart(t, s)
		time.Sleep(m(1.5))
		synctest.Wait()
		// A foreign writer's record, newer than the scheduler's two.
		ctx := context.Background()
		if _, err := store.ClaimSlot(ctx, "sched:billing:sync", slotstore.SlotClaim{Slot: time.Now().UnixMilli(), Attempt: 1, Term: "x", Record: `{"slot":"soon"`, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			h, err := s.History(ctx, "sync", 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(h) != 2 || h[0].Identity != "a" || h[0].Outcome != scheduling.Success || h[1].Slot.After(h[0].Slot) {
				t.Errorf("history = %+v, want the two runs of a, newest first", h)
			}
		}
		if n := logs.FilterMessage("SchedulerHistoryRecordSkipped").Len(); n != 1 {
			t.Errorf("SchedulerHistoryRecordSkipped logged %d times, want 1", n)
		}
	})
}

// TestParseRunRecord_S11: records round-trip; bad ones are errors.
func TestParseRunRecord_S11(t *testing.T) {
	for _, bad := range []string{"", "{", `{"slot":1}`, `{"slot":1,"start":2,"attempt":1,"outcome":"exploded"}`, `[1,2]`} {
		if _, err := scheduling.ParseRunRecord(bad); err == nil {
			t.Errorf("ParseRunRecord(%q): no error", bad)
		}
	}
	r, err := scheduling.ParseRunRecord(`{"slot":60000,"start":61000000,"end":62000000,"id":"a","fence":7,"outcome":"timeout","attempt":2}`)
	if err != nil || r.Slot.UnixMilli() != 60000 || r.Ended.Sub(r.Started) != time.Second || r.Fence != 7 || r.Outcome != scheduling.Timeout || r.Attempt != 2 || r.Identity != "a" {
		t.Errorf("ParseRunRecord = %+v, %v", r, err)
	}
}

// TestSetPaused_S10: the tool-side pause works on jobs the store has
// records of and names the job it has none of.
func TestSetPaused_S10(t *testing.T) {
	store := newStoreNoBubble(t)
	ctx := context.Background()
	if err := scheduling.SetPaused(ctx, store, "billing", "typo", true); err == nil || !strings.Contains(err.Error(), `"typo"`) {
		t.Errorf("SetPaused of a job without records = %v, want an error naming it", err)
	}
	seedSlot(t, store, scheduling.JobKey("billing", "sync"), time.Now())
	if err := scheduling.SetPaused(ctx, store, "billing", "sync", true); err != nil {
		t.Fatal(err)
	}
	if st, err := store.JobStatus(ctx, "sched:billing:sync"); err != nil || !st.Paused || st.TTL < scheduling.SlotStateTTL-time.Minute {
		t.Errorf("status after SetPaused = %+v, %v", st, err)
	}
	if err := scheduling.SetPaused(ctx, stateStoreJobs{}, "billing", "sync", true); !errors.Is(err, scheduling.ErrNoJobStore) {
		t.Errorf("SetPaused over a store without job records = %v, want ErrNoJobStore", err)
	}
}

// stateStoreJobs is a store with the job methods whose features say it
// keeps no job records (a lock whose provider has none).
type stateStoreJobs struct{ slotstore.Jobs }

func (stateStoreJobs) Features() locking.Features { return locking.Features{} }

// TestScheduler_S11_RecordsKeepTheSchedule: every run record, the one a
// claim writes while the run goes and the one its end writes, keeps the
// job's schedule as ScheduleSpec gives it, bound to the scheduler's zone,
// so a tool without the job's code can compute the next slot.
func TestScheduler_S11_RecordsKeepTheSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		berlin := mustLoad(t, "Europe/Berlin")
		store := newStore(t)
		f := leadershiptest.NewFake("billing")
		s := newScheduler(t, f, scheduling.WithSlotStore(store), scheduling.WithLocation(berlin), scheduling.WithMisfireWindow(0))
		sched, err := scheduling.Cron("* * * * *")
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		mustAdd(t, s, scheduling.Job{Name: "sync", Schedule: sched, Run: func(ctx context.Context) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}})
		f.SetLeader(true)
		mustStart(t, s)
		const want = "CRON_TZ=Europe/Berlin * * * * *"
		time.Sleep(m(1))
		synctest.Wait()
		h, err := s.History(context.Background(), "sync", 1)
		if err != nil || len(h) != 1 || !h[0].Ended.IsZero() || h[0].Schedule != want {
			t.Fatalf("history while running = %+v, %v; want one running record with schedule %q", h, err, want)
		}
		close(release)
		synctest.Wait()
		h, err = s.History(context.Background(), "sync", 1)
		if err != nil || len(h) != 1 || h[0].Ended.IsZero() || h[0].Schedule != want {
			t.Fatalf("history after the run = %+v, %v; want one ended record with schedule %q", h, err, want)
		}
	})
}
