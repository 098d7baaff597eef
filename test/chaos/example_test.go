package chaos_test

import (
	"fmt"
	"time"

	"github.com/hostloom/hostloom/test/chaos"
)

// ExampleCheck judges a synthetic history: replica r1.1 starts working for
// "billing" 50 ms before r0.1 stops, which breaks the guarantee.
func ExampleCheck() {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	slice := func(id string, from, to time.Duration) chaos.Record {
		return chaos.Record{Kind: chaos.KindWork, Identity: id, Role: "billing", Term: 1,
			Start: t0.Add(from).UnixNano(), End: t0.Add(to).UnixNano(), MonoStart: int64(from), MonoEnd: int64(to)}
	}
	h := chaos.History{
		Roles: []string{"billing"},
		Records: []chaos.Record{
			slice("r0.1", 0, 900*time.Millisecond),
			slice("r1.1", 850*time.Millisecond, 2*time.Second),
		},
		From: t0, To: t0.Add(2 * time.Second),
	}
	r := chaos.Check(h, chaos.Limits{Lease: time.Second, RetryInterval: 250 * time.Millisecond})
	fmt.Println("ok:", r.OK())
	fmt.Println("handovers:", r.Handovers)
	fmt.Println("overlap:", r.Overlaps[0].A.Identity, r.Overlaps[0].B.Identity, r.Overlaps[0].Length)
	// Output:
	// ok: false
	// handovers: 1
	// overlap: r0.1 r1.1 50ms
}
