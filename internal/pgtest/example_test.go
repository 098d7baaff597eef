package pgtest_test

import (
	"fmt"

	"github.com/hostloom/hostloom/internal/pgtest"
)

// A test binary's TestMain starts one server for all its tests and stops it
// at the end; the tests skip when it could not start (or fail, in CI).
func Example() {
	s, err := pgtest.Start()
	if err != nil {
		fmt.Println("no PostgreSQL here; tests skip (or fail when pgtest.Required())")
		return
	}
	defer s.Stop()
	fmt.Println(s.Port() > 0)
}
