package slotstore_test

import (
	"fmt"

	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// What a claim can achieve, by name (as metrics and logs show it).
func ExampleClaimStatus() {
	for s := slotstore.ClaimGranted; s <= slotstore.ClaimRefused; s++ {
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
