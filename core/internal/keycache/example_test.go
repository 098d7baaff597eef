package keycache_test

import (
	"fmt"

	"github.com/hostloom/hostloom/core/internal/keycache"
)

func ExampleCache() {
	var c keycache.Cache
	meta := func(k string) string { return "{" + k + "}:meta" }
	fmt.Println(c.Get("billing", meta))
	fmt.Println(c.Get("billing", meta)) // remembered: built once
	// Output:
	// {billing}:meta
	// {billing}:meta
}
