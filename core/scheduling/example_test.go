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

func Example() {
	// In an application l is the role's *leadership.Elector.
	l := leadershiptest.NewFake("billing")
	l.SetLeader(true)
	lock, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		panic(err)
	}
	s, err := scheduling.New(l, scheduling.WithSlotStore(lock))
	if err != nil {
		panic(err)
	}
	ran := make(chan struct{}, 1)
	err = s.Add(scheduling.Job{
		Name:     "heartbeat",
		Schedule: scheduling.Every(10 * time.Millisecond),
		Timeout:  time.Second,
		Run: func(ctx context.Context) error {
			select {
			case ran <- struct{}{}:
			default:
			}
			return nil
		},
	})
	if err != nil {
		panic(err)
	}
	if err := s.Start(context.Background()); err != nil {
		panic(err)
	}
	<-ran
	if err := s.Stop(context.Background()); err != nil {
		panic(err)
	}
	info := s.Jobs()[0]
	fmt.Println(info.Name, info.Schedule, info.LastOutcome)
	// Output: heartbeat every 10ms success
}

func ExampleCron() {
	s, err := scheduling.Cron("CRON_TZ=Europe/Berlin 30 2 * * *")
	if err != nil {
		panic(err)
	}
	// Clocks in Berlin jump from 02:00 to 03:00 on 2026-03-29: 02:30 does
	// not exist that day, so it has no slot.
	at := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	for range 2 {
		at = s.Next(at)
		fmt.Println(at.UTC())
	}
	_, err = scheduling.Cron("*/5 * * *")
	fmt.Println(err)
	// Output:
	// 2026-03-30 00:30:00 +0000 UTC
	// 2026-03-31 00:30:00 +0000 UTC
	// scheduling: cron expression "*/5 * * *": expected 5 to 6 fields, found 4: [*/5 * * *]
}

func ExampleEvery() {
	s := scheduling.Every(15 * time.Minute)
	fmt.Println(s.Next(time.Date(2026, 5, 1, 10, 7, 3, 0, time.UTC)))
	// Output: 2026-05-01 10:15:00 +0000 UTC
}
