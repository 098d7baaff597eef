package scheduling_test

import (
	"context"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/scheduling"
)

// Jobs reports what an operators' view shows: the job's policies with
// their defaults applied and its next slots (W1).
func TestScheduler_W1_JobsReportsPoliciesAndUpcomingSlots(t *testing.T) {
	s, err := scheduling.New(leadershiptest.NewFake("billing"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(context.Context) error { return nil }
	for _, j := range []scheduling.Job{
		{Name: "a", Schedule: scheduling.Every(time.Hour), Run: run},
		{Name: "b", Schedule: scheduling.Every(time.Minute), Run: run, Timeout: time.Second, Jitter: time.Millisecond,
			Overlap: scheduling.OverlapBufferOne, CatchUp: scheduling.CatchUpNone},
	} {
		if err := s.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	jobs := s.Jobs()
	a, b := jobs[0], jobs[1]
	if a.Overlap != scheduling.OverlapSkip || a.CatchUp != scheduling.CatchUpLatest || a.Timeout != 0 || a.Recover {
		t.Errorf("a's defaults: %+v", a)
	}
	if b.Overlap != scheduling.OverlapBufferOne || b.CatchUp != scheduling.CatchUpNone || b.Timeout != time.Second || b.Jitter != time.Millisecond {
		t.Errorf("b's options: %+v", b)
	}
	if len(b.Upcoming) != scheduling.UpcomingSlots || !b.Upcoming[0].Equal(b.Next) {
		t.Fatalf("b.Upcoming %v, Next %v", b.Upcoming, b.Next)
	}
	for i := 1; i < len(b.Upcoming); i++ {
		if d := b.Upcoming[i].Sub(b.Upcoming[i-1]); d != time.Minute {
			t.Errorf("Upcoming[%d] - Upcoming[%d] = %v, want 1m", i, i-1, d)
		}
	}
}
