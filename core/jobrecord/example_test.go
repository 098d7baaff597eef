package jobrecord_test

import (
	"fmt"
	"time"

	"github.com/hostloom/hostloom/core/jobrecord"
)

// A claim decided over a record: the first claim of a slot is granted and
// writes run record 1; a second claim of the same slot finds it started.
func ExampleClaim() {
	clock := time.UnixMilli(1_700_000_000_000)
	c := jobrecord.SlotClaim{Slot: 60_000, Attempt: 1, Term: "a-1", Hold: time.Minute, Record: "run 1", TTL: time.Hour}
	res, ch := jobrecord.Claim(jobrecord.Record{}, clock, c)
	fmt.Println(res.Status, res.Seq, ch.Write, ch.Entry, ch.Value)
	res, ch = jobrecord.Claim(ch.Record, clock, c)
	fmt.Println(res.Status, res.Previous, ch.Write)
	// Output:
	// granted 1 true 1 run 1
	// started 60000 false
}

// What a claim can achieve, by name (as metrics and logs show it).
func ExampleClaimStatus() {
	for s := jobrecord.ClaimGranted; s <= jobrecord.ClaimRefused; s++ {
		fmt.Println(s)
	}
	// Output:
	// granted
	// started
	// paused
	// recoverable
	// wait
	// refused
}
