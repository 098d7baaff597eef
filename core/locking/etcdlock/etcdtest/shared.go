package etcdtest

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// Shared is the cluster of one test binary, shared by its tests: TestMain
// runs the tests through Main, each test takes a key prefix of its own
// from NewPrefix. The zero Shared is ready to use.
type Shared struct {
	cluster *Cluster
	err     error // why there is no cluster
	seq     atomic.Int64
}

// Main starts the cluster, runs the tests (m.Run), stops the cluster and
// returns the tests' exit code. When the cluster does not start, Main
// prints the reason and returns without running the tests: 1 when
// Required, else 0 (a package whose tests share a cluster needs it for
// every test and example).
func (sh *Shared) Main(m interface{ Run() int }) int {
	sh.cluster, sh.err = Launch(Options{})
	if sh.err != nil {
		if Required() {
			fmt.Fprintf(os.Stderr, "etcd is required here (CI or HOSTLOOM_REQUIRE_ETCD=1 is set) but did not start: %v\n", sh.err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "skipping the tests: etcd did not start (set %s or put etcd on PATH; set CI=1 to make this a failure): %v\n", ServerEnv, sh.err)
		return 0
	}
	code := m.Run()
	sh.cluster.Stop()
	return code
}

// Endpoints returns the shared cluster's client URLs (nil before Main
// started it).
func (sh *Shared) Endpoints() []string {
	if sh.cluster == nil {
		return nil
	}
	return sh.cluster.Endpoints()
}

// Cluster returns the shared cluster; without one it skips tb with the
// reason.
func (sh *Shared) Cluster(tb TB) *Cluster {
	tb.Helper()
	if sh.err != nil {
		tb.Skipf("etcd did not start, skipping (set %s or put etcd on PATH; set CI=1 to make this a failure): %v", ServerEnv, sh.err)
	}
	if sh.cluster == nil {
		tb.Fatalf("etcdtest: no cluster: TestMain must run the tests through Shared.Main")
	}
	return sh.cluster
}

// NewPrefix returns a key prefix no other test of the binary uses, named
// after name (a test's name): "t<n>-<name>/".
func (sh *Shared) NewPrefix(name string) string {
	r := strings.NewReplacer("/", "-", " ", "-")
	return fmt.Sprintf("t%d-%s/", sh.seq.Add(1), r.Replace(name))
}
