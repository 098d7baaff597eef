package pgtest_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/hostloom/hostloom/core/testing/pgtest"
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

// A test binary shares one server among its tests: its TestMain runs them
// through Main, and each test takes a database of its own (dropped when
// the test ends), skipping when there is no server. The example needs
// PostgreSQL, so it is compiled but not run.
func ExampleShared() {
	var pg pgtest.Shared
	testMain := func(m *testing.M) { os.Exit(pg.Main(m)) }
	aTest := func(t *testing.T) {
		dsn := pg.NewDatabase(t) // connection string of a fresh database
		_ = dsn
	}
	_, _ = testMain, aTest
}
