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

// ExampleCheck_fenced judges the effects a store accepted: r0.1 (fence 10)
// wrote again after r1.1 (fence 20) had written, and the store accepted it.
// No fault excuses that.
func ExampleCheck_fenced() {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	slice := func(id string, fence, seq uint64, from, to time.Duration) chaos.Record {
		return chaos.Record{Kind: chaos.KindWork, Identity: id, Role: "billing", Term: 1, Fence: fence, Seq: seq,
			Start: t0.Add(from).UnixNano(), End: t0.Add(to).UnixNano(), MonoStart: int64(from), MonoEnd: int64(to),
			Effect: chaos.EffectAccepted}
	}
	a1 := slice("r0.1", 10, 1, 0, 900*time.Millisecond)
	b1 := slice("r1.1", 20, 1, time.Second, 2*time.Second)
	a2 := slice("r0.1", 10, 2, 900*time.Millisecond, 950*time.Millisecond)
	entry := func(r chaos.Record) string {
		return chaos.EffectEntry{Identity: r.Identity, Term: r.Term, Fence: r.Fence, Seq: r.Seq}.String()
	}
	h := chaos.History{
		Roles:   []string{"billing"},
		Records: []chaos.Record{a1, a2, b1},
		// The store's order: a2's write landed after b1's.
		Effects: map[string][]string{"billing": {entry(a1), entry(b1), entry(a2)}},
		From:    t0, To: t0.Add(2 * time.Second),
	}
	r := chaos.Check(h, chaos.Limits{Lease: time.Second, RetryInterval: 250 * time.Millisecond})
	fmt.Println("ok:", r.OK())
	fmt.Println(r.StaleAccepted[0])
	// Output:
	// ok: false
	// role billing entry 2: r0.1 (fence 10) accepted after r1.1 (fence 20)
}
