package etcdlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
)

// handoverSetup: alice holds "k" through pa; bob, through pb, was refused
// and so registered as a participant. With watch, pb watches "k" and the
// events it delivers are returned.
func handoverSetup(t *testing.T, cl *clientv3.Client, prefix string, watch bool, aliceTTL time.Duration) (pa, pb *etcdlock.Provider, fa uint64, events chan locking.Event) {
	t.Helper()
	ctx := context.Background()
	pa, pb = newProvider(t, cl, prefix), newProvider(t, cl, prefix)
	r, err := pa.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "aaaa:alice", TTL: aliceTTL, Owner: "alice", ParticipantTTL: 5 * time.Second})
	if err != nil || !r.Acquired {
		t.Fatalf("alice's Acquire = %+v, %v", r, err)
	}
	if watch {
		events = make(chan locking.Event, 64)
		stop, err := pb.Subscribe("k", func(e locking.Event) { events <- e })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		nextOf(t, events, locking.EventSubscribed)
	}
	r2, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "bbbb:bob", TTL: 5 * time.Second, Owner: "bob", ParticipantTTL: 5 * time.Second})
	if err != nil || r2.Acquired {
		t.Fatalf("bob's Acquire while alice holds = %+v, %v; want refused", r2, err)
	}
	return pa, pb, r.Fence, events
}

// nextOf returns the next event of kind k, skipping others, within
// waitFor.
func nextOf(t *testing.T, events <-chan locking.Event, k locking.EventKind) locking.Event {
	t.Helper()
	return nextWithin(t, events, k, waitFor)
}

// nextWithin is nextOf within d.
func nextWithin(t *testing.T, events <-chan locking.Event, k locking.EventKind, d time.Duration) locking.Event {
	t.Helper()
	for {
		select {
		case e := <-events:
			if e.Kind == k {
				return e
			}
		case <-time.After(d):
			t.Fatalf("no %v event within %v", k, d)
		}
	}
}

// revision is the cluster's current revision.
func revision(t *testing.T, cl *clientv3.Client) int64 {
	t.Helper()
	r, err := cl.Get(context.Background(), "revision-probe")
	if err != nil {
		t.Fatal(err)
	}
	return r.Header.Revision
}

// termCommits runs a transaction guarded by p's term of "k" with fence
// and reports Check's verdict.
func termCommits(t *testing.T, cl *clientv3.Client, p *etcdlock.Provider, fence uint64) error {
	t.Helper()
	ctx := context.Background()
	term, err := p.Term("k", fence)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cl.Txn(ctx).If(term.Cmps()...).Then(clientv3.OpPut("effect", "x")).Else(term.Else()...).Commit()
	if err != nil {
		t.Fatal(err)
	}
	return term.Check(ctx, resp)
}

// TestHandover_B1_N2_NamedSuccessorTakesTheKeyWithoutAWrite: a release
// naming a registered participant hands the key over in its one
// transaction: watchers see a release naming the successor, then its
// acquisition; the successor's next acquisition adopts the key without a
// raft write (the cluster's revision does not move) with the handover's
// revision as its fence; the leaver's term ends, the successor's holds,
// and the successor extends and releases the key as any holder.
func TestHandover_B1_N2_NamedSuccessorTakesTheKeyWithoutAWrite(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	pa, pb, fa, events := handoverSetup(t, cl, prefix, true, 5*time.Second)
	ctx := context.Background()
	if ok, err := pa.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "aaaa:alice", Target: "bob", Notify: true}); !ok || err != nil {
		t.Fatalf("alice's Release to bob = %v, %v", ok, err)
	}
	handed := revision(t, cl)
	if e := nextOf(t, events, locking.EventReleased); e.Owner != "bob" {
		t.Fatalf("release announced naming %q, want bob", e.Owner)
	}
	if e := nextOf(t, events, locking.EventAcquired); e.Owner != "bob" {
		t.Fatalf("acquisition announced for %q, want bob", e.Owner)
	}
	st, err := pa.Inspect(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Held || !strings.HasSuffix(st.Value, ":bob") || st.Fence != uint64(handed) {
		t.Fatalf("after the handover: %+v, want held by bob with fence %d", st, handed)
	}
	r, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "cccc:bob", TTL: 5 * time.Second, Owner: "bob", ParticipantTTL: 5 * time.Second})
	if err != nil || !r.Acquired {
		t.Fatalf("bob's Acquire after the handover = %+v, %v", r, err)
	}
	if r.Fence != uint64(handed) || r.Fence <= fa {
		t.Fatalf("bob's fence %d, want the handover's revision %d (alice's was %d)", r.Fence, handed, fa)
	}
	if got := revision(t, cl); got != handed {
		t.Fatalf("revision %d after bob's acquisition, want %d: the adoption wrote", got, handed)
	}
	var te *etcdlock.TermError
	if err := termCommits(t, cl, pa, fa); !errors.As(err, &te) || !te.Held || te.Current != r.Fence {
		t.Fatalf("alice's term after the handover = %v, want ended, held with fence %d", err, r.Fence)
	}
	if err := termCommits(t, cl, pb, r.Fence); err != nil {
		t.Fatalf("bob's term = %v, want it to hold", err)
	}
	if res, err := pa.Extend(ctx, locking.ExtendRequest{Key: "k", Value: "aaaa:alice", TTL: 5 * time.Second}); err != nil || res.Extended {
		t.Fatalf("alice's Extend after the handover = %+v, %v; want refused", res, err)
	}
	if res, err := pb.Extend(ctx, locking.ExtendRequest{Key: "k", Value: "cccc:bob", TTL: 5 * time.Second}); err != nil || !res.Extended {
		t.Fatalf("bob's Extend = %+v, %v", res, err)
	}
	if ok, err := pb.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "cccc:bob"}); !ok || err != nil {
		t.Fatalf("bob's Release = %v, %v", ok, err)
	}
	if e := nextOf(t, events, locking.EventReleased); e.Owner != "" {
		t.Fatalf("bob's release announced naming %q, want nobody", e.Owner)
	}
	r2, err := pa.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "dddd:carol", TTL: 5 * time.Second, Owner: "carol"})
	if err != nil || !r2.Acquired || r2.Fence <= r.Fence {
		t.Fatalf("carol's Acquire after bob's release = %+v, %v; want acquired with a fence above %d", r2, err, r.Fence)
	}
}

// TestHandover_B1_N2_SuccessorWithoutAWatchTakesItAtItsNextAttempt: a
// successor that does not watch the key is refused by the handed-over
// record at its next attempt and adopts it then.
func TestHandover_B1_N2_SuccessorWithoutAWatchTakesItAtItsNextAttempt(t *testing.T) {
	cl := newClient(t)
	pa, pb, fa, _ := handoverSetup(t, cl, prefixOf(t), false, 5*time.Second)
	ctx := context.Background()
	if ok, err := pa.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "aaaa:alice", Target: "bob"}); !ok || err != nil {
		t.Fatalf("alice's Release to bob = %v, %v", ok, err)
	}
	r, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "cccc:bob", TTL: 5 * time.Second, Owner: "bob", ParticipantTTL: 5 * time.Second})
	if err != nil || !r.Acquired || r.Fence <= fa {
		t.Fatalf("bob's Acquire after the handover = %+v, %v; want acquired with a fence above %d", r, err, fa)
	}
	// Nobody else takes it.
	r2, err := pa.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "dddd:carol", TTL: 5 * time.Second, Owner: "carol"})
	if err != nil || r2.Acquired || !strings.HasSuffix(r2.HolderValue, ":bob") {
		t.Fatalf("carol's Acquire = %+v, %v; want refused, held by bob", r2, err)
	}
}

// TestHandover_B1_N2_DepartedSuccessorMeansAPlainRelease: when the named
// successor is no participant any more, the release deletes the key, so
// anyone takes it at once, and the release still names the successor.
func TestHandover_B1_N2_DepartedSuccessorMeansAPlainRelease(t *testing.T) {
	cl := newClient(t)
	pa, pb, _, events := handoverSetup(t, cl, prefixOf(t), true, 5*time.Second)
	ctx := context.Background()
	if err := pb.Deregister(ctx, "k", "bob"); err != nil {
		t.Fatal(err)
	}
	if ok, err := pa.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "aaaa:alice", Target: "bob", Notify: true}); !ok || err != nil {
		t.Fatalf("alice's Release to bob = %v, %v", ok, err)
	}
	if e := nextOf(t, events, locking.EventReleased); e.Owner != "bob" {
		t.Fatalf("release announced naming %q, want bob", e.Owner)
	}
	r, err := pa.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "dddd:carol", TTL: 5 * time.Second, Owner: "carol"})
	if err != nil || !r.Acquired {
		t.Fatalf("carol's Acquire after a release to a departed successor = %+v, %v; want acquired", r, err)
	}
}

// TestHandover_N4_SuccessorWithALongerLeaseMovesTheKey: a successor whose
// lease is longer than the leaver's moves the key to a lease of its own
// length before it counts as taken, so the server never ends the lease
// before its holder believes.
func TestHandover_N4_SuccessorWithALongerLeaseMovesTheKey(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	pa, pb, _, events := handoverSetup(t, cl, prefix, true, 2*time.Second)
	ctx := context.Background()
	if ok, err := pa.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "aaaa:alice", Target: "bob"}); !ok || err != nil {
		t.Fatalf("alice's Release to bob = %v, %v", ok, err)
	}
	nextOf(t, events, locking.EventReleased)
	r, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "cccc:bob", TTL: 7 * time.Second, Owner: "bob", ParticipantTTL: 5 * time.Second})
	if err != nil || !r.Acquired {
		t.Fatalf("bob's Acquire after the handover = %+v, %v", r, err)
	}
	g, err := cl.Get(ctx, prefix+"k/k\x00l")
	if err != nil || len(g.Kvs) != 1 {
		t.Fatalf("lease record: %v, %v", g, err)
	}
	lt, err := cl.TimeToLive(ctx, clientv3.LeaseID(g.Kvs[0].Lease))
	if err != nil {
		t.Fatal(err)
	}
	if lt.GrantedTTL < 7 {
		t.Fatalf("bob's lease granted %ds, want at least 7s", lt.GrantedTTL)
	}
	if res, err := pb.Extend(ctx, locking.ExtendRequest{Key: "k", Value: "cccc:bob", TTL: 7 * time.Second}); err != nil || !res.Extended {
		t.Fatalf("bob's Extend = %+v, %v", res, err)
	}
}

// TestHandover_B1_N4_UnclaimedHandoverRunsOutWithTheLease: a successor
// that never takes the key holds it in name until the lease runs out;
// then anyone takes it.
func TestHandover_B1_N4_UnclaimedHandoverRunsOutWithTheLease(t *testing.T) {
	cl := newClient(t)
	pa, _, _, _ := handoverSetup(t, cl, prefixOf(t), false, time.Second)
	ctx := context.Background()
	if ok, err := pa.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "aaaa:alice", Target: "bob"}); !ok || err != nil {
		t.Fatalf("alice's Release to bob = %v, %v", ok, err)
	}
	deadline := time.Now().Add(waitFor)
	for {
		r, err := pa.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "dddd:carol", TTL: 5 * time.Second, Owner: "carol"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Acquired {
			return
		}
		if !strings.HasSuffix(r.HolderValue, ":bob") {
			t.Fatalf("refused with holder %q, want bob's handed-over record", r.HolderValue)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unclaimed handover still holds the key after %v", waitFor)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestHandover_G1_RestartedIdentityDoesNotTakeIt: a process started
// after the handover with the successor's identity (a restart) registers
// anew, and is refused rather than given the handover (its previous
// incarnation may have taken it, with that fence); the registration it
// replaced is no proof for the first provider either, which is refused
// too. The record runs out with the lease.
func TestHandover_G1_RestartedIdentityDoesNotTakeIt(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	pa, pb, _, _ := handoverSetup(t, cl, prefix, false, 5*time.Second)
	ctx := context.Background()
	if ok, err := pa.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "aaaa:alice", Target: "bob"}); !ok || err != nil {
		t.Fatalf("alice's Release to bob = %v, %v", ok, err)
	}
	restarted := newProvider(t, cl, prefix)
	r, err := restarted.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "eeee:bob", TTL: 5 * time.Second, Owner: "bob", ParticipantTTL: 5 * time.Second})
	if err != nil || r.Acquired || !strings.HasSuffix(r.HolderValue, ":bob") {
		t.Fatalf("a restarted bob's Acquire = %+v, %v; want refused by the handed-over record", r, err)
	}
	r, err = pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "cccc:bob", TTL: 5 * time.Second, Owner: "bob", ParticipantTTL: 5 * time.Second})
	if err != nil || r.Acquired {
		t.Fatalf("the first bob's Acquire after its registration was replaced = %+v, %v; want refused", r, err)
	}
}

// TestHandover_G1_SecondAcquisitionRefused: the successor that took a
// handover and acquires again (its term ended unconfirmed) is refused by
// its own record until the lease runs out, as after any acquisition.
func TestHandover_G1_SecondAcquisitionRefused(t *testing.T) {
	cl := newClient(t)
	pa, pb, _, events := handoverSetup(t, cl, prefixOf(t), true, 5*time.Second)
	ctx := context.Background()
	if ok, err := pa.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "aaaa:alice", Target: "bob"}); !ok || err != nil {
		t.Fatalf("alice's Release to bob = %v, %v", ok, err)
	}
	nextOf(t, events, locking.EventReleased)
	r, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "cccc:bob", TTL: 5 * time.Second, Owner: "bob", ParticipantTTL: 5 * time.Second})
	if err != nil || !r.Acquired {
		t.Fatalf("bob's Acquire after the handover = %+v, %v", r, err)
	}
	r2, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "dddd:bob", TTL: 5 * time.Second, Owner: "bob", ParticipantTTL: 5 * time.Second})
	if err != nil || r2.Acquired {
		t.Fatalf("bob's second Acquire = %+v, %v; want refused, not fence %d again", r2, err, r.Fence)
	}
}

// TestHandover_B1_N2_BoundToTheSuccessorsSession: when the holder's
// latest read of the participants shows the successor (an extension a
// lease after the last read reads them again), the handover is bound to
// the successor's session lease, which the note of its revision names,
// and the successor takes it without a write.
func TestHandover_B1_N2_BoundToTheSuccessorsSession(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	pa, pb, fa, events := handoverSetup(t, cl, prefix, true, time.Second)
	ctx := context.Background()
	// An extension for 500ms reads the participants again once the last
	// read is 500ms old.
	time.Sleep(600 * time.Millisecond)
	if res, err := pa.Extend(ctx, locking.ExtendRequest{Key: "k", Value: "aaaa:alice", TTL: 500 * time.Millisecond, Owner: "alice", ParticipantTTL: 5 * time.Second}); err != nil || !res.Extended || res.Participants != 2 {
		t.Fatalf("alice's Extend = %+v, %v; want extended, 2 participants", res, err)
	}
	if ok, err := pa.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "aaaa:alice", Target: "bob", Notify: true}); !ok || err != nil {
		t.Fatalf("alice's Release to bob = %v, %v", ok, err)
	}
	handed := revision(t, cl)
	note, err := cl.Get(ctx, prefix+"k/k\x00n")
	if err != nil || len(note.Kvs) != 1 || note.Kvs[0].ModRevision != handed || !strings.HasPrefix(string(note.Kvs[0].Value), "h") {
		t.Fatalf("note after the handover: %v, %v; want a session note of revision %d", note, err, handed)
	}
	nextOf(t, events, locking.EventReleased)
	r, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "cccc:bob", TTL: time.Second, Owner: "bob", ParticipantTTL: 5 * time.Second})
	if err != nil || !r.Acquired || r.Fence != uint64(handed) || r.Fence <= fa {
		t.Fatalf("bob's Acquire = %+v, %v; want acquired with fence %d", r, err, handed)
	}
	if got := revision(t, cl); got != handed {
		t.Fatalf("revision %d after bob's acquisition, want %d: the adoption wrote", got, handed)
	}
	if res, err := pb.Extend(ctx, locking.ExtendRequest{Key: "k", Value: "cccc:bob", TTL: time.Second}); err != nil || !res.Extended {
		t.Fatalf("bob's Extend = %+v, %v", res, err)
	}
}

// The provider answers the hand-over's cheap participant check (H4).
var _ locking.ParticipantProbe = (*etcdlock.Provider)(nil)

// TestHandover_H4_ProbeFindsParticipants: the lock's participant probe
// (Features().Probe) finds an owner that registered through an
// acquisition, not one that never did, and stops finding it once it
// deregisters. Its read is served by the member the client asks, so the
// deregistration may show a moment later there.
func TestHandover_H4_ProbeFindsParticipants(t *testing.T) {
	cl := newClient(t)
	l, _ := newLock(t, cl, prefixOf(t), "probe")
	pr := l.Features().Probe
	if pr == nil {
		t.Fatal("Features().Probe is nil over etcd")
	}
	ctx := context.Background()
	ls, err := l.TryAcquirePriority(ctx, "role", 2*time.Second, "alpha", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ls.Release(context.Background()) })
	if _, err := l.TryAcquirePriority(ctx, "role", 2*time.Second, "beta", 0, 0); !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("beta's acquisition: %v, want held", err)
	}
	within := func(owner string, want bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			ok, err := pr.IsParticipant(ctx, "role", owner)
			if err != nil {
				t.Fatal(err)
			}
			if ok == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("IsParticipant(%q) = %v for 5s, want %v", owner, ok, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	within("alpha", true)
	within("beta", true)
	if ok, err := pr.IsParticipant(ctx, "role", "gamma"); err != nil || ok {
		t.Fatalf("IsParticipant(gamma) = %v, %v; want false, nil", ok, err)
	}
	if err := l.Deregister(ctx, "role", "beta"); err != nil {
		t.Fatal(err)
	}
	within("beta", false)
	if _, err := pr.IsParticipant(ctx, "", "alpha"); err == nil {
		t.Fatal("IsParticipant with an empty key: no error")
	}
}

// TestHandover_H4_HolderAnswersFromItsLatestRead: the holder's provider
// answers the probe from its own latest read of the participants while
// that read is younger than the lease, without a request; so a
// participant that deregistered after that read is still found there (the
// release then names it only while its record exists: see
// TestHandover_B1_N2_DepartedSuccessorMeansAPlainRelease), while a
// provider that does not hold the key reads a member's copy and stops
// finding it. Once the read is a lease old, the holder reads too.
func TestHandover_H4_HolderAnswersFromItsLatestRead(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	ctx := context.Background()
	pa, pb := newProvider(t, cl, prefix), newProvider(t, cl, prefix)
	// bob registers first, by an acquisition he then releases, so alice's
	// acquisition reads him among the participants.
	if r, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "bbbb:bob", TTL: time.Second, Owner: "bob", ParticipantTTL: 5 * time.Second}); err != nil || !r.Acquired {
		t.Fatalf("bob's Acquire = %+v, %v", r, err)
	}
	if ok, err := pb.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "bbbb:bob"}); !ok || err != nil {
		t.Fatalf("bob's Release = %v, %v", ok, err)
	}
	began := time.Now()
	if r, err := pa.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "aaaa:alice", TTL: 3 * time.Second, Owner: "alice", ParticipantTTL: 5 * time.Second}); err != nil || !r.Acquired {
		t.Fatalf("alice's Acquire = %+v, %v", r, err)
	}
	if err := pb.Deregister(ctx, "k", "bob"); err != nil {
		t.Fatal(err)
	}
	// bob's record is gone on every member once a linearizable read no
	// longer finds it and a serializable one on this client agrees.
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, err := pb.IsParticipant(ctx, "k", "bob")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a provider that does not hold the key still finds bob 5s after he deregistered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ok, err := pa.IsParticipant(ctx, "k", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if age := time.Since(began); !ok && age < 2500*time.Millisecond {
		t.Fatalf("the holder's probe, %v after its acquisition read bob, did not find him: it did not answer from that read", age)
	}
	time.Sleep(time.Until(began.Add(3100 * time.Millisecond)))
	if ok, err := pa.IsParticipant(ctx, "k", "bob"); err != nil || ok {
		t.Fatalf("the holder's probe a lease after its read = %v, %v; want false, nil (read from a member)", ok, err)
	}
	if ok, err := pa.IsParticipant(ctx, "k", "alice"); err != nil || !ok {
		t.Fatalf("IsParticipant(alice) = %v, %v; want true", ok, err)
	}
}
