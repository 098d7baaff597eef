package policy_test

import (
	"fmt"

	"github.com/hostloom/hostloom/core/scheduling/policy"
)

// The policies decode from their config spelling and print it back.
func ExampleOverlapPolicy_UnmarshalText() {
	var p policy.OverlapPolicy
	fmt.Println(p, p.Valid())
	if err := p.UnmarshalText([]byte("buffer-one")); err != nil {
		fmt.Println(err)
	}
	fmt.Println(p)
	fmt.Println(p.UnmarshalText([]byte("queue")))
	// Output:
	// skip true
	// buffer_one
	// scheduling: unknown overlap policy "queue" (want skip, buffer_one or cancel_previous)
}
