package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/hostloom/hostloom/core/testing/redistest"
)

// StartMain in a benchmark's or example's setup, where no testing.TB
// exists. It needs redis-server, so it is compiled but not run.
func ExampleStartMain() {
	s, stop, err := redistest.StartMain()
	if errors.Is(err, redistest.ErrNoServer) && !redistest.Required() {
		fmt.Println("skipping:", err)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer stop()
	c := s.NewClient()
	defer c.Close()
	fmt.Println(c.Ping(context.Background()).Val())
}
