package lockingtest

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// Backend is one lock backend under test: a fresh, empty store shared by the
// locks of one check.
type Backend interface {
	// NewLock returns a lock with options o over the backend. Locks from
	// two calls must exclude each other like two replicas would (for
	// Redis: separate providers over the same server).
	NewLock(t *testing.T, o locking.Options) *locking.DistributedLock
	// Exists reports whether the backend stores providerKey, byte for byte.
	Exists(t *testing.T, providerKey string) bool
	// Size reports how many keys the backend stores (lock and state keys;
	// fence and participant records may be left out). The suite asserts
	// only that nothing is stored after operations that must write nothing.
	Size(t *testing.T) int
}

// Config describes the backend to check.
type Config struct {
	// New returns a fresh, empty backend for one check. With Synctest it is
	// called inside the check's bubble.
	New func(t *testing.T) Backend

	// Synctest runs every check inside a testing/synctest bubble, on fake
	// time. Set it for in-process backends only: network I/O does not
	// advance fake time. With it the suite also checks that a waiter is
	// woken by the release notification itself (no fake time passes).
	Synctest bool

	// Short is the lease used by the expiry checks (default 50ms); they
	// wait 2×Short+50ms for it to run out. The MaxHold check holds a lease
	// of 6×Short, extended every third of it, for a MaxHold of 24×Short,
	// and waits up to MaxHold plus 10s for the hold to end: raise Short on
	// a loaded machine, where an extension delayed past its lease would
	// (correctly) end the hold early, and for a backend whose leases are
	// whole seconds (etcd: Short of a second).
	Short time.Duration

	// Parallel, above 1, runs up to that many checks at once, each on its
	// own backend from New, whatever the test binary's -parallel: for a
	// backend whose checks spend their time waiting for its server (leases
	// of whole seconds), which New must keep apart per check (a namespace
	// or key prefix of its own). Zero or 1 runs one check at a time.
	Parallel int
}

// failTimeout bounds every wait for something that must happen, so a
// broken backend fails instead of hanging. It is not a performance
// assertion: with fake time it passes in no real time.
const failTimeout = 10 * time.Second

// check is one conformance check. needs are the optional capabilities it
// exercises: it is skipped over a lock without them (whose methods
// testCapabilitiesReported checks for ErrNotSupported instead).
type check struct {
	name  string
	run   func(t *testing.T, c Config, b Backend)
	needs locking.Capabilities
}

var (
	needEvents       = locking.Capabilities{Events: true}
	needInspect      = locking.Capabilities{Inspect: true}
	needParticipants = locking.Capabilities{Participants: true}
	needJobSlots     = locking.Capabilities{JobSlots: true}
	needResign       = locking.Capabilities{Events: true, Resign: true}
)

// checks are run in this order; names cite the DESIGN.md rules they cover.
var checks = []check{
	{"L3_Exclusivity", testExclusivity, locking.Capabilities{}},
	{"L3_ConcurrentTryAcquireOneWinner", testConcurrentOneWinner, locking.Capabilities{}},
	{"L3_HeldErrorRemaining", testHeldErrorRemaining, locking.Capabilities{}},
	{"L3_ExpiryFreesKey", testExpiry, locking.Capabilities{}},
	{"L3_StaleTokenExtendAndReleaseRefused", testStaleToken, locking.Capabilities{}},
	{"L3_ExtendAfterExpiryRefused", testExtendAfterExpiry, locking.Capabilities{}},
	{"L3_ReleaseTwiceRefused", testReleaseTwice, locking.Capabilities{}},
	{"L3_CancelledContextLeavesNoLease", testCancelledContext, locking.Capabilities{}},
	{"L2_OddKeysStoredVerbatim", testOddKeys, locking.Capabilities{}},
	{"L1_InvalidKeysRefused", testInvalidKeys, locking.Capabilities{}},
	{"L1_KeyAtMaxKeyLengthAccepted", testMaxKeyLength, locking.Capabilities{}},
	{"L5_LeaseCappedAtMaxLease", testLeaseCap, locking.Capabilities{}},
	{"L5_ZeroOrNegativeLeaseRefused", testInvalidLease, locking.Capabilities{}},
	{"L4_DisabledWritesNothing", testDisabled, locking.Capabilities{}},
	{"L7_NotificationOnRelease", testNotification, needEvents},
	{"L7_HolderLookup", testHolder, needInspect},
	{"L8_AdvanceMonotonic", testAdvance, needJobSlots},
	{"L6_AcquireWaitsAndWakesOnRelease", testAcquireWaits, locking.Capabilities{}},
	{"L6_AcquireCancelledLeavesHolder", testAcquireCancelled, locking.Capabilities{}},
	{"L6_HeldExtendsAndStopsAtMaxHold", testHeldMaxHold, locking.Capabilities{}},
	{"G1_FencesStrictlyIncreaseAcrossHolders", testFences, locking.Capabilities{}},
	{"P2_RefusalNamesHolder", testHeldOwner, locking.Capabilities{}},
	{"P2_EventsAcquiredReleasedResign", testEvents, needResign},
	{"P1_ParticipantsRegisteredAndExpire", testParticipants, needParticipants},
	{"H2_ReleaseWithdrawsTheOwner", testReleaseWithdraw, needParticipants},
	{"H2_ALateRenewalRegistersNobody", testLateRenewal, needParticipants},
	{"B1_HandoverHoldsTheKeyForItsSuccessor", testHandoverHold, needParticipants},
	{"O1_InspectAndKeys", testInspect, needInspect},
	{"L9_CapabilitiesReported", testCapabilitiesReported, locking.Capabilities{}},
	{"L9_ElectorTakeoverAfterStop", testElectorTakeoverAfterStop, locking.Capabilities{}},
	{"L9_ElectorStopAndRunReturnNil", testElectorStopRunNil, locking.Capabilities{}},
	{"L9_ElectorResignOrNotSupported", testElectorResign, locking.Capabilities{}},
	{"L9_ElectorStopDuringOutage", testElectorStopDuringOutage, locking.Capabilities{}},
}

// Checks returns the names of the checks Run runs over the backend, in
// order: the names of its subtests. Over a ProviderBackend, Run also runs
// them, as far as each restriction allows, under L9_<restriction>/.
func Checks() []string {
	names := make([]string, len(checks))
	for i, c := range checks {
		names[i] = c.name
	}
	return names
}

// Run runs the conformance suite against the backend c describes, one
// subtest per check. A check that needs an optional capability the
// backend's locks lack is skipped (L9_CapabilitiesReported checks that
// the lock says so). When the backend is a ProviderBackend, the suite runs
// again over its provider restricted to the required methods
// (L9_Minimal) and to each optional capability alone (L9_EventsOnly, …).
func Run(t *testing.T, c Config) {
	t.Helper()
	if c.New == nil {
		t.Fatal("lockingtest: Config.New is nil")
	}
	if c.Short <= 0 {
		c.Short = 50 * time.Millisecond
	}
	p := newPool(c.Parallel)
	p.group(func() { runChecks(t, c, p, func(t *testing.T) Backend { return c.New(t) }) })
	for _, v := range variants {
		p.group(func() {
			t.Run("L9_"+v.name, func(t *testing.T) {
				runChecks(t, c, p, func(t *testing.T) Backend {
					pb, ok := c.New(t).(ProviderBackend)
					if !ok {
						t.Skip("the backend does not implement ProviderBackend")
					}
					if _, ok := restrict(pb.NewProvider(t), v, &faults{}); !ok {
						t.Skipf("the provider lacks a capability of %s", v.name)
					}
					return restricted{ProviderBackend: pb, v: v, f: &faults{}}
				})
			})
		})
	}
	p.wait()
}

// pool runs the suite's checks one at a time, or with Config.Parallel up
// to that many at once: each check is a subtest, and testing lets
// subtests of one test run from several goroutines at once.
type pool struct {
	slots chan struct{} // nil: one at a time, on the caller's goroutine
	wg    sync.WaitGroup
}

func newPool(n int) *pool {
	if n <= 1 {
		return &pool{}
	}
	return &pool{slots: make(chan struct{}, n)}
}

// group runs f, on a goroutine of its own when checks run at once; wait
// waits for every f of the pool.
func (p *pool) group(f func()) {
	if p.slots == nil {
		f()
		return
	}
	p.wg.Go(f)
}

func (p *pool) wait() { p.wg.Wait() }

// check runs f (one check) when a slot is free.
func (p *pool) check(f func()) {
	if p.slots == nil {
		f()
		return
	}
	p.slots <- struct{}{}
	defer func() { <-p.slots }()
	f()
}

// runChecks runs every check over a fresh backend from newBackend, and
// returns when all have ended.
func runChecks(t *testing.T, c Config, p *pool, newBackend func(t *testing.T) Backend) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, ch := range checks {
		run := func() { p.check(func() { runCheck(t, c, ch, newBackend) }) }
		if p.slots == nil {
			run()
			continue
		}
		wg.Go(run)
	}
}

// runCheck runs ch as a subtest of t over a fresh backend.
func runCheck(t *testing.T, c Config, ch check, newBackend func(t *testing.T) Backend) {
	t.Run(ch.name, func(t *testing.T) {
		run := func(t *testing.T) {
			b := newBackend(t)
			if ch.needs != (locking.Capabilities{}) {
				if have := b.NewLock(t, opts("probe")).Capabilities(); !provides(have, ch.needs) {
					t.Skipf("the lock lacks %+v (it has %+v)", ch.needs, have)
				}
			}
			ch.run(t, c, b)
		}
		if c.Synctest {
			synctest.Test(t, run)
			return
		}
		run(t)
	})
}

// opts returns DefaultOptions with namespace ns.
func opts(ns string) locking.Options {
	o := locking.DefaultOptions()
	o.Namespace = ns
	return o
}

// acquire takes key or fails t.
func acquire(t *testing.T, l *locking.DistributedLock, key string, lease time.Duration) locking.Lease {
	t.Helper()
	ls, err := l.TryAcquire(context.Background(), key, lease)
	if err != nil {
		t.Fatalf("TryAcquire(%q, %v): %v", key, lease, err)
	}
	return ls
}

// held calls l.Acquire and releases what it returns when the check ends,
// however it ends, so no extension goroutine outlives the check.
func held(t *testing.T, l *locking.DistributedLock, ctx context.Context, key string, lease time.Duration) (*locking.Held, error) {
	h, err := l.Acquire(ctx, key, lease)
	if h != nil {
		t.Cleanup(func() { _ = h.Release(context.Background()) })
	}
	return h, err
}

// expire waits until a lease of c.Short has run out.
func expire(c Config) { time.Sleep(2*c.Short + 50*time.Millisecond) }

func wantLost(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, locking.ErrLeaseLost) {
		t.Fatalf("%s = %v, want ErrLeaseLost", what, err)
	}
}

func wantHeld(t *testing.T, err error, key string) *locking.HeldError {
	t.Helper()
	if !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("TryAcquire(%q) = %v, want ErrNotAcquired", key, err)
	}
	var held *locking.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("TryAcquire(%q) error %T is not a *HeldError", key, err)
	}
	if held.Key != key {
		t.Fatalf("HeldError.Key = %q, want %q", held.Key, key)
	}
	return held
}

func testExclusivity(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	a, other := b.NewLock(t, opts("ex")), b.NewLock(t, opts("ex"))
	la := acquire(t, a, "job", time.Minute)
	_, err := other.TryAcquire(ctx, "job", time.Minute)
	wantHeld(t, err, "job")
	// The holder itself cannot take it twice either.
	_, err = a.TryAcquire(ctx, "job", time.Minute)
	wantHeld(t, err, "job")
	// Another key is independent; another namespace too.
	acquire(t, other, "job2", time.Minute)
	acquire(t, b.NewLock(t, opts("ex2")), "job", time.Minute)
	if err := la.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	acquire(t, other, "job", time.Minute)
}

func testConcurrentOneWinner(t *testing.T, _ Config, b Backend) {
	const n = 8
	locks := make([]*locking.DistributedLock, n)
	for i := range locks {
		locks[i] = b.NewLock(t, opts("race"))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, refusals := 0, 0
	for _, l := range locks {
		wg.Go(func() {
			_, err := l.TryAcquire(context.Background(), "job", time.Minute)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, locking.ErrNotAcquired):
				refusals++
			default:
				t.Errorf("TryAcquire: %v", err)
			}
		})
	}
	wg.Wait()
	if wins != 1 || refusals != n-1 {
		t.Fatalf("wins = %d, refusals = %d; want 1 and %d", wins, refusals, n-1)
	}
}

func testHeldErrorRemaining(t *testing.T, _ Config, b Backend) {
	const lease = 10 * time.Second
	acquire(t, b.NewLock(t, opts("rem")), "job", lease)
	_, err := b.NewLock(t, opts("rem")).TryAcquire(context.Background(), "job", time.Second)
	held := wantHeld(t, err, "job")
	if held.Remaining <= lease-2*time.Second || held.Remaining > lease {
		t.Fatalf("HeldError.Remaining = %v, want within (%v, %v]", held.Remaining, lease-2*time.Second, lease)
	}
	if !strings.Contains(err.Error(), `"job"`) {
		t.Fatalf("error %q does not name the key", err)
	}
}

func testExpiry(t *testing.T, c Config, b Backend) {
	a, other := b.NewLock(t, opts("exp")), b.NewLock(t, opts("exp"))
	acquire(t, a, "job", c.Short)
	expire(c)
	if other.Capabilities().Inspect {
		if _, ok, err := other.Holder(context.Background(), "job"); err != nil || ok {
			t.Fatalf("Holder after expiry = ok %v, err %v; want nobody", ok, err)
		}
	}
	acquire(t, other, "job", time.Minute)
}

func testStaleToken(t *testing.T, c Config, b Backend) {
	ctx := context.Background()
	a, other := b.NewLock(t, opts("stale")), b.NewLock(t, opts("stale"))
	stale := acquire(t, a, "job", c.Short)
	expire(c)
	fresh := acquire(t, other, "job", time.Minute)
	wantLost(t, "stale Extend", stale.Extend(ctx, time.Minute))
	wantLost(t, "stale Release", stale.Release(ctx))
	// The new holder is untouched.
	if err := fresh.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("fresh Extend after stale attempts: %v", err)
	}
	_, err := a.TryAcquire(ctx, "job", time.Minute)
	wantHeld(t, err, "job")
}

func testExtendAfterExpiry(t *testing.T, c Config, b Backend) {
	ctx := context.Background()
	l := b.NewLock(t, opts("extexp"))
	ls := acquire(t, l, "job", c.Short)
	if err := ls.Extend(ctx, c.Short); err != nil {
		t.Fatalf("Extend while held: %v", err)
	}
	expire(c)
	wantLost(t, "Extend after expiry", ls.Extend(ctx, time.Minute))
	// A refused extension does not recreate the key (the backend may keep
	// the key's fence and participants, which are not the lease).
	pkey, err := l.ProviderKey("job")
	if err != nil {
		t.Fatal(err)
	}
	if b.Exists(t, pkey) {
		t.Fatalf("backend stores %q after a refused extension", pkey)
	}
}

func testReleaseTwice(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	ls := acquire(t, b.NewLock(t, opts("twice")), "job", time.Minute)
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	wantLost(t, "second Release", ls.Release(ctx))
	wantLost(t, "Extend after Release", ls.Extend(ctx, time.Minute))
}

func testCancelledContext(t *testing.T, _ Config, b Backend) {
	l := b.NewLock(t, opts("ctx"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.TryAcquire(ctx, "job", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("TryAcquire with cancelled ctx = %v, want context.Canceled", err)
	}
	if n := b.Size(t); n != 0 {
		t.Fatalf("backend stores %d keys after a cancelled acquisition, want 0", n)
	}
	ls := acquire(t, l, "job", time.Minute)
	if err := ls.Extend(ctx, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("Extend with cancelled ctx = %v, want context.Canceled", err)
	}
	if err := ls.Release(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Release with cancelled ctx = %v, want context.Canceled", err)
	}
	if err := ls.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// oddKeys are valid keys with characters that break naive quoting or
// scripting, and braces that must not be taken for hash tags of ours.
var oddKeys = []string{
	`quote"d`, `it's`, `[x]`, `]]--`, `--[[`, `ключ`, `日本語`, `emoji😀`,
	`{braces}`, `a{b}c`, `}{`, `back\slash`, `100%d`, `a:b:c`, `*?`,
}

func testOddKeys(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	hashed := opts("odd")
	hashed.UseHashTags = true
	for _, o := range []locking.Options{opts(""), opts("odd"), hashed} {
		l := b.NewLock(t, o)
		for _, key := range oddKeys {
			pkey, err := l.ProviderKey(key)
			if err != nil {
				t.Fatalf("ProviderKey(%q): %v", key, err)
			}
			prefix := ""
			switch {
			case o.UseHashTags:
				prefix = "{" + o.Namespace + "}:"
			case o.Namespace != "":
				prefix = o.Namespace + ":"
			}
			if want := prefix + "lock:" + key; pkey != want {
				t.Fatalf("ProviderKey(%q) = %q, want %q", key, pkey, want)
			}
			ls := acquire(t, l, key, time.Minute)
			if ls.Key() != key {
				t.Fatalf("Lease.Key = %q, want %q", ls.Key(), key)
			}
			if !b.Exists(t, pkey) {
				t.Fatalf("backend does not store %q verbatim after acquiring %q", pkey, key)
			}
			if err := ls.Release(ctx); err != nil {
				t.Fatalf("Release(%q): %v", key, err)
			}
			if b.Exists(t, pkey) {
				t.Fatalf("backend still stores %q after release", pkey)
			}
		}
	}
}

func testInvalidKeys(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	l := b.NewLock(t, opts("inv"))
	long := strings.Repeat("k", l.MaxKeyLength()+1)
	for _, key := range []string{"", " ", "a b", " lead", "trail ", "tab\tkey", "new\nline", "nul\x00", "del\x7f", "bell\a", "nbsp\u00a0x", "bad\xffutf8", long} {
		_, err := l.TryAcquire(ctx, key, time.Minute)
		if !errors.Is(err, locking.ErrInvalidKey) {
			t.Fatalf("TryAcquire(%q) = %v, want ErrInvalidKey", key, err)
		}
		var ke *locking.KeyError
		if !errors.As(err, &ke) || ke.Key != key {
			t.Fatalf("TryAcquire(%q) error %v does not carry the key as a *KeyError", key, err)
		}
		if !strings.Contains(err.Error(), strconv.Quote(key)) {
			t.Fatalf("error %q does not name the key %q", err, key)
		}
		if _, err := l.ProviderKey(key); !errors.Is(err, locking.ErrInvalidKey) {
			t.Fatalf("ProviderKey(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, _, err := l.Holder(ctx, key); !errors.Is(err, locking.ErrInvalidKey) {
			t.Fatalf("Holder(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, _, err := l.Advance(ctx, key, 1); !errors.Is(err, locking.ErrInvalidKey) {
			t.Fatalf("Advance(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	if n := b.Size(t); n != 0 {
		t.Fatalf("backend stores %d keys after invalid keys, want 0", n)
	}
}

func testMaxKeyLength(t *testing.T, _ Config, b Backend) {
	l := b.NewLock(t, opts("max"))
	key := strings.Repeat("k", l.MaxKeyLength())
	pkey, err := l.ProviderKey(key)
	if err != nil {
		t.Fatalf("ProviderKey(%d bytes): %v", len(key), err)
	}
	acquire(t, l, key, time.Minute)
	if !b.Exists(t, pkey) {
		t.Fatalf("backend does not store the %d-byte key", len(key))
	}
}

func testLeaseCap(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	o := opts("cap")
	o.MaxLease = 2 * time.Second
	l := b.NewLock(t, o)
	ls := acquire(t, l, "job", time.Hour)
	g, ok := ls.(locking.GrantedLease)
	if !ok {
		t.Fatalf("lease %T is not a GrantedLease", ls)
	}
	if g.Granted() != o.MaxLease {
		t.Fatalf("Granted = %v, want MaxLease %v", g.Granted(), o.MaxLease)
	}
	// The backend holds the capped lease: the refusal's remaining TTL
	// (and the holder lookup, when the lock has one) is within the cap.
	ttl := func(what string) {
		t.Helper()
		_, err := b.NewLock(t, o).TryAcquire(ctx, "job", time.Minute)
		if h := wantHeld(t, err, "job"); h.Remaining > o.MaxLease {
			t.Fatalf("%s: holder's remaining TTL %v, want at most %v", what, h.Remaining, o.MaxLease)
		}
		if l.Capabilities().Inspect {
			if h, ok, err := l.Holder(ctx, "job"); err != nil || !ok || h.TTL > o.MaxLease || h.TTL <= 0 {
				t.Fatalf("%s: Holder = %+v, %v, %v; want a TTL within (0, %v]", what, h, ok, err, o.MaxLease)
			}
		}
	}
	ttl("after the acquisition")
	if err := ls.Extend(ctx, 24*time.Hour); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if g.Granted() != o.MaxLease {
		t.Fatalf("Granted after Extend = %v, want %v", g.Granted(), o.MaxLease)
	}
	ttl("after Extend")
	// Below the cap the lease is granted as asked.
	if g2 := acquire(t, l, "short", time.Second).(locking.GrantedLease); g2.Granted() != time.Second {
		t.Fatalf("Granted = %v, want 1s", g2.Granted())
	}
}

func testInvalidLease(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	l := b.NewLock(t, opts("lease"))
	for _, d := range []time.Duration{0, -time.Nanosecond, -time.Minute} {
		_, err := l.TryAcquire(ctx, "job", d)
		if !errors.Is(err, locking.ErrInvalidLease) {
			t.Fatalf("TryAcquire(lease %v) = %v, want ErrInvalidLease", d, err)
		}
		if !strings.Contains(err.Error(), d.String()) {
			t.Fatalf("error %q does not name the lease %v", err, d)
		}
	}
	if n := b.Size(t); n != 0 {
		t.Fatalf("backend stores %d keys after invalid leases, want 0", n)
	}
	ls := acquire(t, l, "job", time.Minute)
	if err := ls.Extend(ctx, 0); !errors.Is(err, locking.ErrInvalidLease) {
		t.Fatalf("Extend(0) = %v, want ErrInvalidLease", err)
	}
}

func testDisabled(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	o := opts("off")
	o.Disabled = true
	l := b.NewLock(t, o)
	if l.Coordinated() {
		t.Fatal("Coordinated = true for a disabled lock")
	}
	a := acquire(t, l, "job", time.Minute)
	bl := acquire(t, b.NewLock(t, o), "job", time.Minute) // everyone is granted
	if err := a.Extend(ctx, time.Minute); err != nil {
		t.Fatalf("placeholder Extend: %v", err)
	}
	if err := bl.Release(ctx); err != nil {
		t.Fatalf("placeholder Release: %v", err)
	}
	if _, ok, err := l.Holder(ctx, "job"); ok || err != nil {
		t.Fatalf("Holder on a disabled lock = %v, %v; want nobody", ok, err)
	}
	if n := b.Size(t); n != 0 {
		t.Fatalf("disabled lock wrote %d keys, want 0", n)
	}
	// Invalid input is still refused.
	if _, err := l.TryAcquire(ctx, "bad key", time.Minute); !errors.Is(err, locking.ErrInvalidKey) {
		t.Fatalf("disabled TryAcquire(bad key) = %v, want ErrInvalidKey", err)
	}
}

func testNotification(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	waiter, holder := b.NewLock(t, opts("note")), b.NewLock(t, opts("note"))
	released, _ := Subscribe(t, waiter, "job")
	other, _ := Subscribe(t, waiter, "other")
	wantEvent(t, released, locking.EventSubscribed, "")
	wantEvent(t, other, locking.EventSubscribed, "")
	// A plain lock user's acquisition may or may not be announced; the
	// release is.
	ls := acquire(t, holder, "job", time.Minute)
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	skipTo(t, released, locking.EventReleased)
	// A second release is delivered too (the subscription lasts until stop).
	ls = acquire(t, holder, "job", time.Minute)
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	skipTo(t, released, locking.EventReleased)
	// Releases of "job" did not reach the subscriber of "other".
	select {
	case e := <-other:
		t.Fatalf("the subscriber of another key received %v", e.Kind)
	default:
	}
}

func testHolder(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	const lease = 10 * time.Second
	l := b.NewLock(t, opts("who"))
	ls, err := l.TryAcquireAs(ctx, "job", lease, "replica-a:42")
	if err != nil {
		t.Fatalf("TryAcquireAs: %v", err)
	}
	if g := ls.(locking.GrantedLease); g.Owner() != "replica-a:42" {
		t.Fatalf("Owner = %q, want replica-a:42", g.Owner())
	}
	h, ok, err := b.NewLock(t, opts("who")).Holder(ctx, "job")
	if err != nil || !ok {
		t.Fatalf("Holder = %v, %v; want found", ok, err)
	}
	if h.Owner != "replica-a:42" {
		t.Fatalf("Holder.Owner = %q, want replica-a:42", h.Owner)
	}
	if h.TTL <= lease-2*time.Second || h.TTL > lease {
		t.Fatalf("Holder.TTL = %v, want within (%v, %v]", h.TTL, lease-2*time.Second, lease)
	}
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, ok, err := l.Holder(ctx, "job"); ok || err != nil {
		t.Fatalf("Holder after release = %v, %v; want nobody", ok, err)
	}
	// The default owner is stored when none is named.
	acquire(t, l, "job", lease)
	if h, _, _ := l.Holder(ctx, "job"); h.Owner != locking.DefaultOwner() {
		t.Fatalf("Holder.Owner = %q, want the default %q", h.Owner, locking.DefaultOwner())
	}
}

func testAdvance(t *testing.T, _ Config, b Backend) {
	ctx := context.Background()
	l := b.NewLock(t, opts("state"))
	if _, ok, err := l.State(ctx, "slot"); ok || err != nil {
		t.Fatalf("State on an empty key = %v, %v; want not found", ok, err)
	}
	steps := []struct {
		key     string
		value   int64
		wantAdv bool
		wantCur int64
	}{
		{"slot", 5, true, 5},
		{"slot", 3, false, 5},
		{"slot", 5, false, 5},
		{"slot", 6, true, 6},
		{"slot", math.MaxInt64 - 1, true, math.MaxInt64 - 1},
		{"slot", math.MaxInt64 - 2, false, math.MaxInt64 - 1}, // beyond float precision
		{"slot", math.MaxInt64, true, math.MaxInt64},
		{"neg", -10, true, -10},
		{"neg", -11, false, -10},
		{"neg", -9, true, -9},
		{"neg", 0, true, 0},
		{"neg", -1, false, 0},
		{"min", math.MinInt64, true, math.MinInt64},
		{"min", math.MinInt64 + 1, true, math.MinInt64 + 1},
	}
	for _, s := range steps {
		adv, cur, err := l.Advance(ctx, s.key, s.value)
		if err != nil || adv != s.wantAdv || cur != s.wantCur {
			t.Fatalf("Advance(%q, %d) = %v, %d, %v; want %v, %d", s.key, s.value, adv, cur, err, s.wantAdv, s.wantCur)
		}
	}
	if v, ok, err := b.NewLock(t, opts("state")).State(ctx, "slot"); err != nil || !ok || v != math.MaxInt64 {
		t.Fatalf("State = %d, %v, %v; want %d", v, ok, err, int64(math.MaxInt64))
	}
	// State lives beside locks without clashing with them.
	acquire(t, l, "slot", time.Minute)
	if v, _, _ := l.State(ctx, "slot"); v != math.MaxInt64 {
		t.Fatalf("State after locking the same key = %d", v)
	}
}

func testAcquireWaits(t *testing.T, c Config, b Backend) {
	ctx := context.Background()
	holder, waiter := b.NewLock(t, opts("wait")), b.NewLock(t, opts("wait"))
	ls := acquire(t, holder, "job", time.Minute)
	type result struct {
		h   *locking.Held
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel) // a waiter that never wakes ends with the check
	go func() {
		h, err := held(t, waiter, wctx, "job", time.Minute)
		got <- result{h, err, time.Now()}
	}()
	if c.Synctest {
		synctest.Wait()
	} else {
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case r := <-got:
		t.Fatalf("Acquire returned while the key was held: %v", r.err)
	default:
	}
	releasedAt := time.Now()
	if err := ls.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(failTimeout):
		t.Fatalf("Acquire did not return within %v of the release", failTimeout)
	}
	if r.err != nil {
		t.Fatalf("Acquire: %v", r.err)
	}
	caps := waiter.Capabilities()
	if c.Synctest && caps.Events && r.at.Sub(releasedAt) != 0 {
		// On fake time only a notification wakes the waiter without time
		// passing; polling would have cost a poll period.
		t.Fatalf("Acquire returned %v after the release, want at once (woken by the notification)", r.at.Sub(releasedAt))
	}
	if caps.Inspect {
		if h, ok, _ := holder.Holder(ctx, "job"); !ok || h.Owner != locking.DefaultOwner() {
			t.Fatalf("Holder after Acquire = %+v, %v", h, ok)
		}
	} else if _, err := holder.TryAcquire(ctx, "job", time.Minute); !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("TryAcquire after Acquire = %v, want the key held", err)
	}
	if r.h.Key() != "job" {
		t.Fatalf("Held.Key = %q", r.h.Key())
	}
}

func testAcquireCancelled(t *testing.T, _ Config, b Backend) {
	holder, waiter := b.NewLock(t, opts("cancel")), b.NewLock(t, opts("cancel"))
	ls, err := holder.TryAcquireAs(context.Background(), "job", time.Minute, "first")
	if err != nil {
		t.Fatalf("TryAcquireAs: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := held(t, waiter, ctx, "job", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its deadline = %v, want DeadlineExceeded", err)
	}
	if !holder.Capabilities().Inspect {
		// Without holder lookup: the key is still held, by the first.
		if err := ls.Extend(context.Background(), time.Minute); err != nil {
			t.Fatalf("first holder's Extend after a cancelled Acquire: %v", err)
		}
	} else if h, ok, err := holder.Holder(context.Background(), "job"); err != nil || !ok || h.Owner != "first" {
		t.Fatalf("Holder after a cancelled Acquire = %+v, %v, %v; want the first holder", h, ok, err)
	}
	if err := ls.Release(context.Background()); err != nil {
		t.Fatalf("first holder's Release: %v", err)
	}
	// Invalid input is refused at once, not waited on.
	if _, err := held(t, waiter, context.Background(), "", time.Minute); !errors.Is(err, locking.ErrInvalidKey) {
		t.Fatalf("Acquire(\"\") = %v, want ErrInvalidKey", err)
	}
	if _, err := held(t, waiter, context.Background(), "job", 0); !errors.Is(err, locking.ErrInvalidLease) {
		t.Fatalf("Acquire(lease 0) = %v, want ErrInvalidLease", err)
	}
}

func testHeldMaxHold(t *testing.T, c Config, b Backend) {
	ctx := context.Background()
	lease := 6 * c.Short
	o := opts("hold")
	o.MaxHold = 4 * lease
	l := b.NewLock(t, o)
	h, err := held(t, l, ctx, "job", lease)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	// Past two leases, the lock is still held thanks to extension.
	time.Sleep(2*lease + c.Short)
	select {
	case <-h.Done():
		t.Fatalf("Held ended before MaxHold: %v", h.Err())
	default:
	}
	if _, err := b.NewLock(t, o).TryAcquire(ctx, "job", time.Minute); !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("TryAcquire after two leases = %v; want the key still held (extended)", err)
	}
	// MaxHold counts from the acquisition: wait out what is left of it
	// (it grows with Short), then failTimeout.
	select {
	case <-h.Done():
	case <-time.After(o.MaxHold + failTimeout):
		t.Fatalf("Held still running %v past MaxHold %v", failTimeout, o.MaxHold)
	}
	if err := h.Err(); !errors.Is(err, locking.ErrLeaseLost) || !strings.Contains(err.Error(), "MaxHold") {
		t.Fatalf("Held.Err = %v, want ErrLeaseLost naming MaxHold", err)
	}
	// The lease runs out: another caller gets the key.
	wctx, cancel := context.WithTimeout(ctx, lease+failTimeout)
	defer cancel()
	h2, err := held(t, b.NewLock(t, o), wctx, "job", time.Minute)
	if err != nil {
		t.Fatalf("Acquire after MaxHold: %v", err)
	}
	if err := h2.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := h.Release(ctx); !errors.Is(err, locking.ErrLeaseLost) {
		t.Fatalf("Release after MaxHold = %v, want the loss", err)
	}
}
