package gocronleader_test

import (
	"context"
	"fmt"

	"github.com/go-co-op/gocron/v2"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/scheduling/gocronleader"
)

func Example() {
	// In an application l is the role's *leadership.Elector.
	l := leadershiptest.NewFake("inventory")
	e, err := gocronleader.New(l)
	if err != nil {
		panic(err)
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedElector(e))
	if err != nil {
		panic(err)
	}
	defer s.Shutdown()

	fmt.Println(e.IsLeader(context.Background()))
	l.SetLeader(true)
	fmt.Println(e.IsLeader(context.Background()))
	// Output:
	// gocronleader: not the leader of role "inventory"
	// <nil>
}
