package etcdtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
)

// Launch in a benchmark's or example's setup, where no testing.TB exists.
// It needs the etcd server binary, so it is compiled but not run.
func ExampleLaunch() {
	c, err := etcdtest.Launch(etcdtest.Options{})
	if errors.Is(err, etcdtest.ErrNoServer) && !etcdtest.Required() {
		fmt.Println("skipping:", err)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer c.Stop()
	cl, err := c.Client()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer cl.Close()
	_, err = cl.Put(context.Background(), "greeting", "hello")
	fmt.Println(err)
}
