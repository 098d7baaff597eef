package buildapi_test

import (
	"fmt"

	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/config/lockbuild/buildapi"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// A backend returns a lockbuild.Provided; it is the same type.
func ExampleProvided() {
	var p lockbuild.Provided = buildapi.Provided{Provider: memlock.New()}
	fmt.Println(p.Provider != nil, p.Close == nil, p.Check == nil)
	// Output:
	// true true true
}
