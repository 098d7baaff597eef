package scheduling_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/scheduling"
)

// TestScheduler_ManyJobs runs 1,000 jobs with different schedules for one
// hour of fake time, with a slot store, and checks every job ran at every
// one of its slots, on time, and nowhere else.
func TestScheduler_ManyJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		f := leadershiptest.NewFake("billing")
		f.SetLeader(true)
		s := newScheduler(t, f, scheduling.WithSlotStore(newStore(t)), scheduling.WithMisfireWindow(0))
		crons := []string{"*/2 * * * *", "0 * * * *", "*/15 * * * * *", "@every 7m", "5,35 * * * *"}
		var mu sync.Mutex
		got := make(map[string][]time.Time)
		scheds := make(map[string]scheduling.Schedule)
		const jobs = 1000
		for i := range jobs {
			name := fmt.Sprintf("job-%04d", i)
			var sched scheduling.Schedule
			if i%2 == 0 {
				sched = scheduling.Every(time.Duration(10+i%97) * time.Second)
			} else {
				sched = mustCron(t, crons[i%len(crons)])
			}
			scheds[name] = sched
			mustAdd(t, s, scheduling.Job{Name: name, Schedule: sched, Run: func(context.Context) error {
				mu.Lock()
				got[name] = append(got[name], time.Now())
				mu.Unlock()
				return nil
			}})
		}
		mustStart(t, s)
		const span = time.Hour
		time.Sleep(span)
		synctest.Wait()

		total := 0
		for name, sched := range scheds {
			var want []time.Time
			for at := sched.Next(t0); !at.After(t0.Add(span)); at = sched.Next(at) {
				want = append(want, at)
			}
			runs := got[name]
			total += len(runs)
			if len(runs) != len(want) {
				t.Errorf("%s (%s): %d runs, want %d", name, sched, len(runs), len(want))
				continue
			}
			for i := range want {
				if !runs[i].Equal(want[i]) {
					t.Errorf("%s run %d at %v, want %v", name, i, runs[i].Sub(t0), want[i].Sub(t0))
					break
				}
			}
		}
		for _, info := range s.Jobs() {
			if info.LastOutcome != scheduling.Success || !info.Next.After(t0.Add(span)) {
				t.Errorf("%s: %+v", info.Name, info)
				break
			}
		}
		t.Logf("%d jobs, %d runs in %v of fake time", jobs, total, span)
	})
}
