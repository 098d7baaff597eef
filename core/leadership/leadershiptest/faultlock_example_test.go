package leadershiptest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// A FaultLock injects faults per operation, switchable at run time.
func ExampleFaultLock() {
	inner, _ := locking.New(memlock.New(), locking.DefaultOptions())
	fl := leadershiptest.NewFaultLock(inner)
	ctx := context.Background()

	fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultError)
	_, err := fl.TryAcquire(ctx, "k", time.Second)
	fmt.Println(errors.Is(err, leadershiptest.ErrInjected))

	fl.Set(leadershiptest.OpAcquire, leadershiptest.FaultNone)
	lease, _ := fl.TryAcquire(ctx, "k", time.Second)
	fl.Set(leadershiptest.OpExtend, leadershiptest.FaultRefuse)
	fmt.Println(errors.Is(lease.Extend(ctx, time.Second), locking.ErrLeaseLost))

	fl.Clear()
	fmt.Println(lease.Extend(ctx, time.Second), fl.Calls(leadershiptest.OpAcquire), fl.Calls(leadershiptest.OpExtend))
	// Output:
	// true
	// true
	// <nil> 2 2
}
