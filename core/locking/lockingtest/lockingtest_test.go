package lockingtest_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/lockingtest"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// mutantEnv selects the broken provider TestMutantProvider runs the suite on.
const mutantEnv = "LOCKINGTEST_MUTANT"

// mutant is memlock with one deliberate defect.
type mutant struct {
	*memlock.Provider
	defect string
}

func (m mutant) Acquire(ctx context.Context, req locking.AcquireRequest) (locking.AcquireResult, error) {
	if m.defect == "no-participants" {
		req.ParticipantTTL = 0
	}
	r, err := m.Provider.Acquire(ctx, req)
	switch m.defect {
	case "not-exclusive":
		r.Acquired = true
		r.Fence = max(r.Fence, 1)
	case "no-remaining":
		r.Remaining = 0
	case "fence-not-increasing":
		if r.Acquired {
			r.Fence = 7
		}
	case "no-holder-owner":
		r.HolderValue = ""
	}
	return r, err
}

func (m mutant) Extend(ctx context.Context, req locking.ExtendRequest) (locking.ExtendResult, error) {
	if m.defect == "extend-without-owner-check" {
		return locking.ExtendResult{Extended: true}, nil
	}
	r, err := m.Provider.Extend(ctx, req)
	if m.defect == "late-renewal-registers" && err == nil && !r.Extended && req.ParticipantTTL > 0 {
		// Registers the owner whatever the outcome: an acquisition
		// (which registers) given back at once when it took the key.
		a, err := m.Provider.Acquire(ctx, locking.AcquireRequest{Key: req.Key, Value: req.Value, TTL: req.TTL,
			Owner: req.Owner, ParticipantTTL: req.ParticipantTTL, Priority: req.Priority})
		if err == nil && a.Acquired {
			_, _ = m.Provider.Release(ctx, locking.ReleaseRequest{Key: req.Key, Value: req.Value})
		}
	}
	return r, err
}

func (m mutant) Subscribe(key string, fn func(locking.Event)) (func(), error) {
	switch m.defect {
	case "no-events":
		return func() {}, nil
	case "no-notification":
		return m.Provider.Subscribe(key, func(e locking.Event) {
			if e.Kind != locking.EventReleased {
				fn(e)
			}
		})
	}
	return m.Provider.Subscribe(key, fn)
}

func (m mutant) Release(ctx context.Context, req locking.ReleaseRequest) (bool, error) {
	if m.defect == "withdraw-keeps-participant" {
		req.Withdraw = ""
	}
	if m.defect == "handover-not-held" {
		req.Hold = 0
	}
	if m.defect == "release-without-owner-check" {
		_, _, _, _ = m.Provider.Get(ctx, req.Key)
		return true, nil
	}
	return m.Provider.Release(ctx, req)
}

// backend serves locks over one provider.
type backend struct {
	mem *memlock.Provider
	p   locking.Provider
}

func (b backend) NewLock(t *testing.T, o locking.Options) *locking.DistributedLock {
	t.Helper()
	l, err := locking.New(b.p, o)
	if err != nil {
		t.Fatalf("locking.New: %v", err)
	}
	return l
}

func (b backend) Exists(t *testing.T, key string) bool {
	_, _, ok, err := b.mem.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func (b backend) Size(*testing.T) int { return b.mem.Len() }

// providerBackend is a backend that hands out its provider, so the checks
// that call a provider directly run too.
type providerBackend struct{ backend }

func (b providerBackend) NewProvider(*testing.T) locking.Provider { return b.p }

// TestMutantProvider runs the suite over the mutant named by mutantEnv; it
// is a helper process of TestRun_FailsOnBrokenProviders.
func TestMutantProvider(t *testing.T) {
	defect := os.Getenv(mutantEnv)
	if defect == "" {
		t.Skip("helper process of TestRun_FailsOnBrokenProviders")
	}
	lockingtest.Run(t, lockingtest.Config{
		Synctest: true,
		New: func(*testing.T) lockingtest.Backend {
			mem := memlock.New()
			return providerBackend{backend{mem: mem, p: mutant{mem, defect}}}
		},
	})
}

// TestRun_FailsOnBrokenProviders proves the checks can fail: each broken
// provider fails the checks that cover its defect, and the suite ends
// cleanly (no leaked goroutine panics a synctest bubble).
func TestRun_FailsOnBrokenProviders(t *testing.T) {
	if os.Getenv(mutantEnv) != "" {
		t.Skip("inside a helper process")
	}
	for defect, want := range map[string][]string{
		"not-exclusive":               {"L3_Exclusivity", "L3_ConcurrentTryAcquireOneWinner", "L6_AcquireWaitsAndWakesOnRelease"},
		"no-remaining":                {"L3_HeldErrorRemaining"},
		"extend-without-owner-check":  {"L3_StaleTokenExtendAndReleaseRefused", "L3_ExtendAfterExpiryRefused"},
		"release-without-owner-check": {"L3_StaleTokenExtendAndReleaseRefused", "L3_ReleaseTwiceRefused"},
		"no-notification":             {"L7_NotificationOnRelease", "L6_AcquireWaitsAndWakesOnRelease"},
		"fence-not-increasing":        {"G1_FencesStrictlyIncreaseAcrossHolders"},
		"no-holder-owner":             {"P2_RefusalNamesHolder"},
		"no-events":                   {"P2_EventsAcquiredReleasedResign"},
		"no-participants":             {"P1_ParticipantsRegisteredAndExpire"},
		"withdraw-keeps-participant":  {"H2_ReleaseWithdrawsTheOwner"},
		"late-renewal-registers":      {"H2_ALateRenewalRegistersNobody"},
		"handover-not-held":           {"B1_HandoverHoldsTheKeyForItsSuccessor"},
	} {
		t.Run(defect, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestMutantProvider$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), mutantEnv+"="+defect)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed over a provider with defect %s:\n%s", defect, out)
			}
			if regexp.MustCompile(`(?m)^panic: `).Match(out) {
				t.Fatalf("the suite panicked instead of failing:\n%s", out)
			}
			var failed []string
			for _, m := range regexp.MustCompile(`--- FAIL: TestMutantProvider/(\S+)`).FindAllSubmatch(out, -1) {
				failed = append(failed, string(m[1]))
			}
			for _, w := range want {
				if !slices.Contains(failed, w) {
					t.Errorf("check %s did not fail for defect %s; failed: %v", w, defect, failed)
				}
			}
		})
	}
}

// inspectOnly is memlock with the required methods and an inspection that
// keeps no participants: a provider documenting that it has none.
type inspectOnly struct{ mem *memlock.Provider }

func (p inspectOnly) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	return p.mem.Acquire(ctx, r)
}

func (p inspectOnly) Extend(ctx context.Context, r locking.ExtendRequest) (locking.ExtendResult, error) {
	return p.mem.Extend(ctx, r)
}

func (p inspectOnly) Release(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	return p.mem.Release(ctx, r)
}

func (p inspectOnly) Inspect(ctx context.Context, key string) (locking.ProviderKeyState, error) {
	st, err := p.mem.Inspect(ctx, key)
	st.Participants = nil
	return st, err
}

func (p inspectOnly) Keys(ctx context.Context, prefix string) ([]string, error) {
	return p.mem.Keys(ctx, prefix)
}

// TestRun_O1_InspectWithoutParticipants: a provider that inspects holders
// and fences but keeps no participants passes the suite; the inspection
// check asks for participants only from a lock that reports them.
func TestRun_O1_InspectWithoutParticipants(t *testing.T) {
	lockingtest.Run(t, lockingtest.Config{
		Synctest: true,
		New: func(*testing.T) lockingtest.Backend {
			mem := memlock.New()
			return backend{mem: mem, p: inspectOnly{mem}}
		},
	})
}

// TestRun_N5_ParallelRunsEveryCheckAtOnce: with Config.Parallel the suite
// runs its checks at once, each on a backend of its own, and still runs
// every one of them. The first two checks to start wait for each other,
// which only checks run at once can do.
func TestRun_N5_ParallelRunsEveryCheckAtOnce(t *testing.T) {
	var (
		mu      sync.Mutex
		started = map[string]bool{}
		met     = make(chan struct{})
		arrived int
	)
	lockingtest.Run(t, lockingtest.Config{
		Short:    100 * time.Millisecond,
		Parallel: 8,
		New: func(t *testing.T) lockingtest.Backend {
			mu.Lock()
			started[t.Name()] = true
			arrived++
			first := arrived <= 2
			if arrived == 2 {
				close(met)
			}
			mu.Unlock()
			if first {
				select {
				case <-met:
				case <-time.After(10 * time.Second):
					t.Error("the first two checks did not run at once")
				}
			}
			mem := memlock.New()
			return backend{mem: mem, p: mem}
		},
	})
	mu.Lock()
	defer mu.Unlock()
	for _, name := range lockingtest.Checks() {
		if !started[t.Name()+"/"+name] {
			t.Errorf("check %s did not run", name)
		}
	}
}
