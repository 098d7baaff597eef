package etcdlockfx_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
)

// cluster is the three-member etcd cluster of the test run.
var cluster etcdtest.Shared

func TestMain(m *testing.M) {
	code := cluster.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
