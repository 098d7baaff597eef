package participants_test

import (
	"fmt"
	"slices"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/participants"
)

// A backend that keeps participants in Go applies the priority rules to
// its own records: here, an acquisition by "a" (priority 1, yield 2 s) of
// a free key while "b" (priority 5) is registered.
func Example() {
	now := time.Now()
	ps := []locking.Participant{
		{Owner: "a", Priority: 1, Since: now},
		{Owner: "b", Priority: 5, Since: now.Add(-time.Minute)},
	}
	var yields participants.Yields
	if top, ok := participants.Higher(slices.Values(ps), "a", 1); ok {
		wait := yields.Wait("leader:billing", 2*time.Second, now)
		fmt.Printf("refused: wait %v for priority %d\n", wait, top)
	}
	count, preempt := participants.Extension(slices.Values(ps), "a", 1, 15*time.Second, now)
	fmt.Println("if a held it:", count, "participants, preempted:", preempt)
	// Output:
	// refused: wait 2s for priority 5
	// if a held it: 2 participants, preempted: true
}
