package etcdlock_test

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/lockingtest"
)

// backend is one conformance check's store: a key prefix of its own on
// the shared cluster.
type backend struct {
	cl     *clientv3.Client
	prefix string
}

func (b backend) NewLock(t *testing.T, o locking.Options) *locking.DistributedLock {
	t.Helper()
	l, err := locking.New(b.NewProvider(t), o)
	if err != nil {
		t.Fatalf("locking.New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// NewProvider implements lockingtest.ProviderBackend: a provider of its
// own on the check's prefix.
func (b backend) NewProvider(t *testing.T) locking.Provider {
	t.Helper()
	return newProvider(t, b.cl, b.prefix)
}

// Exists reports a live lease under key (a released key keeps its fence
// record, which is not a lease).
func (b backend) Exists(t *testing.T, key string) bool {
	t.Helper()
	return count(t, b.cl, b.prefix+"k/"+key+"\x00l") == 1
}

// Size counts live leases and state values.
func (b backend) Size(t *testing.T) int {
	t.Helper()
	r, err := b.cl.Get(t.Context(), b.prefix+"k/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, kv := range r.Kvs {
		if kv.Key[len(kv.Key)-1] == 'l' {
			n++
		}
	}
	return n + count(t, b.cl, b.prefix+"s/")
}

// TestConformance_N5 runs the provider conformance suite (L1–L9, G1, P1,
// P2, O1) over a three-member etcd cluster, each check under a prefix of
// its own: the full provider, then restricted to the required methods
// and to each optional capability alone (L9). Leases are whole seconds,
// so the expiry checks use a one-second lease, and the checks, which
// spend their time waiting for leases to run out, run eight at a time.
func TestConformance_N5(t *testing.T) {
	cl := newClient(t)
	lockingtest.Run(t, lockingtest.Config{
		Short:    time.Second,
		Parallel: 8,
		New: func(t *testing.T) lockingtest.Backend {
			return backend{cl: cl, prefix: prefixOf(t)}
		},
	})
}
