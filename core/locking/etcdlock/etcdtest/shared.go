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
// returns the tests' exit code. When the cluster does not start, the
// tests run and those that need it skip with the reason; when Required,
// Main instead prints the reason and returns 1 without running them.
func (sh *Shared) Main(m interface{ Run() int }) int {
	sh.cluster, sh.err = Launch(Options{})
	if sh.err != nil && Required() {
		fmt.Fprintf(os.Stderr, "etcd is required here (CI or HOSTLOOM_REQUIRE_ETCD=1 is set) but did not start: %v\n", sh.err)
		return 1
	}
	code := m.Run()
	if sh.cluster != nil {
		sh.cluster.Stop()
	}
	return code
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
