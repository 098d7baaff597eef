package memlock_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/lockingtest"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backend is one memlock provider shared by the locks of a check.
type backend struct{ p *memlock.Provider }

func (b backend) NewLock(t *testing.T, o locking.Options) *locking.DistributedLock {
	t.Helper()
	l, err := locking.New(b.p, o)
	if err != nil {
		t.Fatalf("locking.New: %v", err)
	}
	return l
}

func (b backend) Exists(t *testing.T, providerKey string) bool {
	t.Helper()
	_, _, ok, err := b.p.Get(context.Background(), providerKey)
	if err != nil {
		t.Fatalf("Get(%q): %v", providerKey, err)
	}
	return ok
}

// NewProvider implements lockingtest.ProviderBackend: in process, every
// lock of a check shares the one provider.
func (b backend) NewProvider(*testing.T) locking.Provider { return b.p }

// Size counts the live leases (memlock exposes no count of state values;
// no check that asserts on Size writes state).
func (b backend) Size(*testing.T) int { return b.p.Len() }

// TestConformance runs the provider conformance suite (L1–L8) over memlock,
// each check in a synctest bubble with the provider created inside it.
func TestConformance(t *testing.T) {
	lockingtest.Run(t, lockingtest.Config{
		New:      func(*testing.T) lockingtest.Backend { return backend{memlock.New()} },
		Synctest: true,
	})
}

// TestJobStore_S9_Memlock runs the job store checks (S9–S11) over memlock.
func TestJobStore_S9_Memlock(t *testing.T) {
	l, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	lockingtest.RunJobStore(t, l)
}

// TestJobs_V1_ConcurrentClaimsGrantedOnce: concurrent claims of one slot
// are granted once.
func TestJobs_V1_ConcurrentClaimsGrantedOnce(t *testing.T) {
	l, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	lockingtest.RunJobClaimRace(t, l, 16)
}
