package scheduling_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/scheduling"
)

// A job with overlap, catch-up and recovery policies; its runs read their
// slot and attempt from ctx, and the history from the slot store.
func ExampleScheduler_History() {
	l := leadershiptest.NewFake("billing") // in an application: the role's *leadership.Elector
	l.SetLeader(true)
	lock, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		panic(err)
	}
	s, err := scheduling.New(l, scheduling.WithSlotStore(lock), scheduling.WithIdentity("replica-1"))
	if err != nil {
		panic(err)
	}
	ran := make(chan int, 1)
	err = s.Add(scheduling.Job{
		Name:     "invoices",
		Schedule: scheduling.Every(10 * time.Millisecond),
		Overlap:  scheduling.OverlapBufferOne,
		CatchUp:  scheduling.CatchUpNone,
		Recover:  true,
		Run: func(ctx context.Context) error {
			attempt, _ := scheduling.AttemptFrom(ctx)
			select {
			case ran <- attempt:
			default:
			}
			return nil
		},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := s.Start(ctx); err != nil {
		panic(err)
	}
	fmt.Println("attempt", <-ran)
	if err := s.Pause(ctx, "invoices"); err != nil {
		panic(err)
	}
	if err := s.Stop(ctx); err != nil {
		panic(err)
	}
	h, err := s.History(ctx, "invoices", 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(h[0].Identity, h[0].Attempt, h[0].Outcome, s.Jobs()[0].Paused)
	// Output:
	// attempt 1
	// replica-1 1 success true
}
