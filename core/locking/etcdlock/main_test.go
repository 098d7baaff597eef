package etcdlock_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
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

// newClient returns a client of the shared cluster, closed when t ends.
// Without a cluster it skips t.
func newClient(t testing.TB) *clientv3.Client {
	t.Helper()
	cl, err := cluster.Cluster(t).Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// newProvider returns a provider over cl with prefix, closed when t ends.
func newProvider(t testing.TB, cl *clientv3.Client, prefix string) *etcdlock.Provider {
	t.Helper()
	p, err := etcdlock.New(cl, etcdlock.Options{Prefix: prefix})
	if err != nil {
		t.Fatalf("etcdlock.New: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// newLock returns a lock over a new provider, namespace ns.
func newLock(t testing.TB, cl *clientv3.Client, prefix, ns string) (*locking.DistributedLock, *etcdlock.Provider) {
	t.Helper()
	p := newProvider(t, cl, prefix)
	lo := locking.DefaultOptions()
	lo.Namespace = ns
	l, err := locking.New(p, lo)
	if err != nil {
		t.Fatal(err)
	}
	return l, p
}

// prefixOf returns a fresh key prefix for t.
func prefixOf(t testing.TB) string {
	return cluster.NewPrefix(strings.ReplaceAll(t.Name(), "/", "-"))
}

// count returns how many keys are stored under prefix.
func count(t testing.TB, cl *clientv3.Client, prefix string) int {
	t.Helper()
	r, err := cl.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return int(r.Count)
}
