package leadership_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
)

// Producers write on every instance; only the leader's items reach the
// reader. Close ends the range once the accepted items are read.
func ExampleChannel() {
	// In a service, l is the role's *Elector; a Fake stands in here.
	l := leadershiptest.NewFake("inventory")
	changes, err := leadership.NewChannel[string]("inventory-changes", l, leadership.DefaultChannelOptions())
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	_ = changes.Write(ctx, "sku-1 -1") // follower: accepted and discarded
	l.SetLeader(true)
	_ = changes.Write(ctx, "sku-2 +5")
	_ = changes.Write(ctx, "sku-3 -2")
	changes.Close()

	for change := range changes.All(ctx) {
		fmt.Println(change)
	}
	_, err = changes.Read(ctx)
	fmt.Println(errors.Is(err, leadership.ErrChannelClosed))
	// Output:
	// sku-2 +5
	// sku-3 -2
	// true
}

// DropOldest keeps the newest items when the reader falls behind; each
// item it drops is counted with reason "full".
func ExampleChannelOptions_dropOldest() {
	l := leadershiptest.NewFake("metrics")
	l.SetLeader(true)
	o := leadership.DefaultChannelOptions()
	o.Capacity = 2
	o.FullMode = leadership.DropOldest
	samples, err := leadership.NewChannel[int]("samples", l, o)
	if err != nil {
		panic(err)
	}
	defer samples.Close()
	for i := 1; i <= 4; i++ {
		fmt.Print(samples.TryWrite(i), " ")
	}
	a, _ := samples.TryRead()
	b, _ := samples.TryRead()
	fmt.Println(a, b)
	// Output: true true true true 3 4
}

// Bad options are reported by field and value.
func ExampleNewChannel_badOptions() {
	o := leadership.DefaultChannelOptions()
	o.Capacity = 0
	_, err := leadership.NewChannel[int]("jobs", leadershiptest.NewFake("r"), o)
	fmt.Println(err)
	// Output: leadership: invalid channel options: channel "jobs": capacity 0: must be > 0
}

func ExampleParseFullMode() {
	m, err := leadership.ParseFullMode("drop_oldest")
	fmt.Println(m, err)
	// Output: drop_oldest <nil>
}
