package etcdlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
	"github.com/hostloom/hostloom/core/locking/lockingtest"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// TestNew_N1_InvalidOptionsNameFieldAndValue: a prefix etcd's tools cannot
// take, a too long one and a negative backoff are errors naming the field
// and the value; a nil client is refused.
func TestNew_N1_InvalidOptionsNameFieldAndValue(t *testing.T) {
	cl := newClient(t)
	for _, c := range []struct {
		o    etcdlock.Options
		want string
	}{
		{etcdlock.Options{Prefix: "app\nlocks/"}, `Prefix "app\nlocks/"`},
		{etcdlock.Options{Prefix: "nul\x00/"}, `Prefix "nul\x00/"`},
		{etcdlock.Options{Prefix: "bad\xff/"}, `Prefix "bad\xff/": invalid UTF-8`},
		{etcdlock.Options{Prefix: strings.Repeat("p", etcdlock.MaxPrefixLength+1)}, "at most 256"},
		{etcdlock.Options{ReconnectMax: -time.Second}, "ReconnectMax -1s"},
	} {
		_, err := etcdlock.New(cl, c.o)
		if !errors.Is(err, etcdlock.ErrInvalidOptions) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want ErrInvalidOptions naming %s", c.o, err, c.want)
		}
	}
	if _, err := etcdlock.New(nil, etcdlock.Options{}); !errors.Is(err, etcdlock.ErrNilClient) {
		t.Fatalf("New(nil) = %v, want ErrNilClient", err)
	}
	p, err := etcdlock.New(cl, etcdlock.Options{Prefix: "ünïcode/ok:"})
	if err != nil {
		t.Fatalf("New with a printable prefix: %v", err)
	}
	_ = p.Close()
}

// TestJobStore_S9_N2_Etcd runs the job store checks (S9–S11) that the
// other providers pass over the etcd cluster.
func TestJobStore_S9_N2_Etcd(t *testing.T) {
	l, _ := newLock(t, newClient(t), prefixOf(t), "billing")
	lockingtest.RunJobStore(t, l)
}

// TestJobs_V1_ConcurrentClaimsGrantedOnce: concurrent claims of one slot,
// each a read and a transaction on the record's revision, are granted
// once.
func TestJobs_V1_ConcurrentClaimsGrantedOnce(t *testing.T) {
	l, _ := newLock(t, newClient(t), prefixOf(t), "")
	lockingtest.RunJobClaimRace(t, l, 8)
}

// TestJobs_S11_N4_RecordsExpireTogether: a job's records, history
// included, live on one lease that each write refreshes, and run out
// together.
func TestJobs_S11_N4_RecordsExpireTogether(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	l, _ := newLock(t, cl, prefix, "")
	ctx := context.Background()
	c := slotstore.SlotClaim{Slot: 5, Attempt: 1, Term: "t", Record: "r", TTL: time.Second, Hold: time.Second}
	if r, err := l.ClaimSlot(ctx, "k", c); err != nil || r.Status != slotstore.ClaimGranted {
		t.Fatalf("claim: %+v %v", r, err)
	}
	st, err := l.JobStatus(ctx, "k")
	if err != nil || st.TTL <= 0 || st.TTL > time.Second || st.Runs != 1 {
		t.Fatalf("JobStatus = %+v, %v; want one run with a TTL within (0, 1s]", st, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for count(t, cl, prefix+"j/")+count(t, cl, prefix+"h/") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the job's records did not run out")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st, err := l.JobStatus(ctx, "k"); err != nil || st != (slotstore.JobStatus{}) {
		t.Fatalf("JobStatus after expiry = %+v, %v; want nothing", st, err)
	}
}

// TestAcquire_N4_LeaseIsWholeSecondsNeverShorter: a lease is granted in
// whole seconds, rounded up, and the server's remaining time is never
// below what the holder asked for at the acquisition.
func TestAcquire_N4_LeaseIsWholeSecondsNeverShorter(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	p := newProvider(t, cl, prefix)
	ctx := context.Background()
	for i, ttl := range []time.Duration{time.Millisecond, 1500 * time.Millisecond, 2 * time.Second} {
		key := "k" + string(rune('a'+i))
		r, err := p.Acquire(ctx, locking.AcquireRequest{Key: key, Value: "v" + key, TTL: ttl, Owner: "o"})
		if err != nil || !r.Acquired {
			t.Fatalf("Acquire(%v) = %+v, %v", ttl, r, err)
		}
		g, err := cl.Get(ctx, prefix+"k/"+key+"\x00l")
		if err != nil || len(g.Kvs) != 1 {
			t.Fatalf("lease record of %q: %v, %v", key, g, err)
		}
		lt, err := cl.TimeToLive(ctx, clientv3.LeaseID(g.Kvs[0].Lease))
		if err != nil {
			t.Fatal(err)
		}
		want := int64((ttl + time.Second - 1) / time.Second)
		if lt.GrantedTTL < want {
			t.Fatalf("lease for %v granted %ds, want at least %ds", ttl, lt.GrantedTTL, want)
		}
		if uint64(g.Kvs[0].CreateRevision) != r.Fence {
			t.Fatalf("fence %d, want the acquisition's revision %d", r.Fence, g.Kvs[0].CreateRevision)
		}
	}
}

// TestAcquire_N2_SpareLeaseReused: a released lease is reused by the next
// acquisition (one write instead of a grant and a write), and the reused
// lease ends with the new holder's key only.
func TestAcquire_N2_SpareLeaseReused(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	p := newProvider(t, cl, prefix)
	ctx := context.Background()
	leaseOf := func(key string) int64 {
		t.Helper()
		g, err := cl.Get(ctx, prefix+"k/"+key+"\x00l")
		if err != nil || len(g.Kvs) != 1 {
			t.Fatalf("lease record of %q: %v, %v", key, g, err)
		}
		return g.Kvs[0].Lease
	}
	r, err := p.Acquire(ctx, locking.AcquireRequest{Key: "a", Value: "va", TTL: 5 * time.Second, Owner: "o"})
	if err != nil || !r.Acquired {
		t.Fatal(r, err)
	}
	first := leaseOf("a")
	if ok, err := p.Release(ctx, locking.ReleaseRequest{Key: "a", Value: "va"}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	r, err = p.Acquire(ctx, locking.AcquireRequest{Key: "b", Value: "vb", TTL: 5 * time.Second, Owner: "o"})
	if err != nil || !r.Acquired {
		t.Fatal(r, err)
	}
	if got := leaseOf("b"); got != first {
		t.Fatalf("lease of the second acquisition %x, want the released %x reused", got, first)
	}
	// The stale value's extension is refused although the lease lives on.
	if res, err := p.Extend(ctx, locking.ExtendRequest{Key: "a", Value: "va", TTL: 5 * time.Second}); err != nil || res.Extended {
		t.Fatalf("Extend of the released value = %+v, %v; want refused", res, err)
	}
	if res, err := p.Extend(ctx, locking.ExtendRequest{Key: "b", Value: "vb", TTL: 5 * time.Second}); err != nil || !res.Extended {
		t.Fatalf("Extend of the holder = %+v, %v", res, err)
	}
}

// TestRelease_N2_OperatorReleaseRevokesTheLease: a release by another
// process (the hostloom CLI's) revokes the holder's lease, so the
// holder's next extension is refused.
func TestRelease_N2_OperatorReleaseRevokesTheLease(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	holder, operator := newProvider(t, cl, prefix), newProvider(t, cl, prefix)
	ctx := context.Background()
	r, err := holder.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "v", TTL: time.Minute, Owner: "o"})
	if err != nil || !r.Acquired {
		t.Fatal(r, err)
	}
	if ok, err := operator.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "other"}); ok || err != nil {
		t.Fatalf("release of another value = %v, %v; want false", ok, err)
	}
	if ok, err := operator.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "v"}); !ok || err != nil {
		t.Fatalf("operator's release = %v, %v", ok, err)
	}
	if res, err := holder.Extend(ctx, locking.ExtendRequest{Key: "k", Value: "v", TTL: time.Minute}); err != nil || res.Extended {
		t.Fatalf("holder's Extend after the operator's release = %+v, %v; want refused", res, err)
	}
}

// TestEvents_N2_HandoverNamesTheSuccessorAndExpiryIsAnnounced: a release
// naming a target is announced with it, and a lease that runs out is
// announced as an EventReleased too (an expiry: see
// TestEvents_Q1_N5_ExpiryToldApartFromARelease), so candidates try.
func TestEvents_N2_HandoverNamesTheSuccessorAndExpiryIsAnnounced(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	l, _ := newLock(t, cl, prefix, "ev")
	events, _ := lockingtest.Subscribe(t, l, "job")
	nextWithin(t, events, locking.EventSubscribed, 10*time.Second)
	ctx := context.Background()
	ls, err := l.TryAcquireAs(ctx, "job", time.Minute, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if e := nextWithin(t, events, locking.EventAcquired, 10*time.Second); e.Owner != "alice" {
		t.Fatalf("acquired by %q, want alice", e.Owner)
	}
	if err := ls.(locking.HandoverLease).ReleaseTo(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if e := nextWithin(t, events, locking.EventReleased, 10*time.Second); e.Owner != "bob" {
		t.Fatalf("released to %q, want bob", e.Owner)
	}
	if _, err := l.TryAcquireAs(ctx, "job", time.Second, "bob"); err != nil {
		t.Fatal(err)
	}
	nextWithin(t, events, locking.EventAcquired, 10*time.Second)
	if e := nextWithin(t, events, locking.EventReleased, 10*time.Second); e.Owner != "" {
		t.Fatalf("expiry announced naming %q, want nobody", e.Owner)
	}
}

// TestEvents_Q1_N5_ExpiryToldApartFromARelease: a holder's release is
// announced as one (Expired false), and so is a handover; a lease the
// server ends (revoked here, as an etcd member that revoked live leases
// or an operator's release does; run out in the test above) is announced
// with Expired set, so the elector that led verifies its lease and the
// candidates give it a head start.
func TestEvents_Q1_N5_ExpiryToldApartFromARelease(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	l, _ := newLock(t, cl, prefix, "ex")
	events, _ := lockingtest.Subscribe(t, l, "job")
	nextWithin(t, events, locking.EventSubscribed, 10*time.Second)
	ctx := context.Background()
	acquire := func(owner string) locking.Lease {
		t.Helper()
		ls, err := l.TryAcquireAs(ctx, "job", time.Minute, owner)
		if err != nil {
			t.Fatal(err)
		}
		nextWithin(t, events, locking.EventAcquired, 10*time.Second)
		return ls
	}
	if err := acquire("alice").Release(ctx); err != nil {
		t.Fatal(err)
	}
	if e := nextWithin(t, events, locking.EventReleased, 10*time.Second); e.Expired || e.Owner != "" {
		t.Fatalf("a release announced as %+v, want a release naming nobody", e)
	}
	if err := acquire("bob").(locking.HandoverLease).ReleaseTo(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	if e := nextWithin(t, events, locking.EventReleased, 10*time.Second); e.Expired || e.Owner != "carol" {
		t.Fatalf("a release to carol announced as %+v", e)
	}
	acquire("dave")
	pkey, err := l.ProviderKey("job")
	if err != nil {
		t.Fatal(err)
	}
	r, err := cl.Get(ctx, prefix+"k/"+pkey+"\x00l")
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("dave's lease record: %v, %v", r, err)
	}
	if _, err := cl.Revoke(ctx, clientv3.LeaseID(r.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	if e := nextWithin(t, events, locking.EventReleased, 10*time.Second); !e.Expired || e.Owner != "" {
		t.Fatalf("a revoked lease announced as %+v, want an expiry", e)
	}
}

// TestProvider_N1_ConcurrentAcquisitionsOneWinnerEach: many keys taken
// concurrently by two providers: each key has one holder.
func TestProvider_N1_ConcurrentAcquisitionsOneWinnerEach(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	a, b := newProvider(t, cl, prefix), newProvider(t, cl, prefix)
	ctx := context.Background()
	var mu sync.Mutex
	wins := map[string]int{}
	var wg sync.WaitGroup
	for i := range 20 {
		key := "k" + string(rune('a'+i))
		for j, p := range []*etcdlock.Provider{a, b} {
			wg.Go(func() {
				r, err := p.Acquire(ctx, locking.AcquireRequest{Key: key, Value: key + string(rune('0'+j)), TTL: 5 * time.Second, Owner: "o"})
				if err != nil {
					t.Error(err)
					return
				}
				if r.Acquired {
					mu.Lock()
					wins[key]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	for i := range 20 {
		if key := "k" + string(rune('a'+i)); wins[key] != 1 {
			t.Fatalf("%q won %d times, want once", key, wins[key])
		}
	}
}

// TestExtend_H2_ARenewalPastItsCheckRegistersNobody: a renewal that
// passed Extend's check that this provider holds the lease, and then
// finds it released with a withdrawal (its holder stopped meanwhile),
// writes no participant record; while the lease is held it does.
func TestExtend_H2_ARenewalPastItsCheckRegistersNobody(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	p := newProvider(t, cl, prefix)
	ctx := context.Background()
	owners := func() []string {
		t.Helper()
		ps, err := p.Participants(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		var o []string
		for _, pt := range ps {
			o = append(o, pt.Owner)
		}
		return o
	}
	r, err := p.Acquire(ctx, locking.AcquireRequest{Key: "job", Value: "alice-1", TTL: time.Minute, Owner: "alice", ParticipantTTL: time.Minute})
	if err != nil || !r.Acquired {
		t.Fatalf("Acquire = %+v, %v", r, err)
	}
	if err := p.Deregister(ctx, "job", "alice"); err != nil {
		t.Fatal(err)
	}
	if written, err := p.RegisterWhileHeld(ctx, "job", "alice", "alice-1", time.Minute); err != nil || !written {
		t.Fatalf("registration while the lease is held: written %t, %v; want written", written, err)
	}
	if got := owners(); len(got) != 1 || got[0] != "alice" {
		t.Fatalf("participants while alice holds the lease = %v, want [alice]", got)
	}
	if ok, err := p.Release(ctx, locking.ReleaseRequest{Key: "job", Value: "alice-1", Withdraw: "alice"}); err != nil || !ok {
		t.Fatalf("Release = %t, %v", ok, err)
	}
	if written, err := p.RegisterWhileHeld(ctx, "job", "alice", "alice-1", time.Minute); err != nil || written {
		t.Fatalf("registration after the release: written %t, %v; want not written", written, err)
	}
	if got := owners(); len(got) != 0 {
		t.Fatalf("participants after a renewal that came after the release = %v, want none", got)
	}
}
