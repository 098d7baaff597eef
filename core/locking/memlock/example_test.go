package memlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// The in-process provider behind a DistributedLock, with holder lookup.
func Example() {
	lock, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := lock.TryAcquireAs(ctx, "leader:billing", time.Minute, "replica-a"); err != nil {
		panic(err)
	}
	h, ok, err := lock.Holder(ctx, "leader:billing")
	fmt.Println(h.Owner, ok, err)
	// Output: replica-a true <nil>
}
