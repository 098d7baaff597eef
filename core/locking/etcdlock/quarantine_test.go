package etcdlock_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
)

// quarantined returns a provider over cl with prefix and ExpiryQuarantine,
// closed when t ends.
func quarantined(t *testing.T, cl *clientv3.Client, prefix string) *etcdlock.Provider {
	t.Helper()
	p, err := etcdlock.New(cl, etcdlock.Options{Prefix: prefix, ExpiryQuarantine: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// revokeHolder revokes the lease the key's lease record is attached to,
// as etcd does to a live lease in the defect the README describes.
func revokeHolder(t *testing.T, cl *clientv3.Client, prefix, key string) {
	t.Helper()
	ctx := context.Background()
	r, err := cl.Get(ctx, prefix+"k/"+key+"\x00l")
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("the lease record of %q: %v, %v", key, r, err)
	}
	if _, err := cl.Revoke(ctx, clientv3.LeaseID(r.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
}

// TestQuarantine_N5_RevokedLeaseWaitsALease: with ExpiryQuarantine, a key
// whose holder's lease etcd ended (here revoked, as the paused raft
// leader of the README's defect does to live leases) is refused for a
// lease, counted from when the provider first found it free, then
// taken; a key freed by a release, and a key never held, are taken at
// once. Without the option the revoked key is taken at once: the overlap
// the option closes.
func TestQuarantine_N5_RevokedLeaseWaitsALease(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	ctx := context.Background()
	pa, pb := quarantined(t, cl, prefix), quarantined(t, cl, prefix)
	plain := newProvider(t, cl, prefix)

	// A key never held is taken at once.
	if r, err := pa.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "aaaa:alice", TTL: 2 * time.Second, Owner: "alice"}); err != nil || !r.Acquired {
		t.Fatalf("alice's Acquire of a key never held = %+v, %v; want acquired", r, err)
	}
	fa := int64(0)
	if r, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "bbbb:bob", TTL: time.Second, Owner: "bob"}); err != nil || r.Acquired {
		t.Fatalf("bob's Acquire while alice holds = %+v, %v; want refused", r, err)
	} else if r.HolderValue != "aaaa:alice" {
		t.Fatalf("bob's refusal names %q, want alice's value", r.HolderValue)
	}
	revokeHolder(t, cl, prefix, "k")
	seen := time.Now()
	r, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "bbbb:bob", TTL: time.Second, Owner: "bob"})
	if err != nil || r.Acquired {
		t.Fatalf("bob's Acquire of a key whose lease was revoked = %+v, %v; want refused for a lease", r, err)
	}
	// alice's lease was granted 2s: that bounds how long she believes.
	if r.Remaining < 1500*time.Millisecond || r.Remaining > 2*time.Second {
		t.Fatalf("bob refused with %v to wait, want about alice's 2s lease", r.Remaining)
	}
	if r2, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "bbbb:bob", TTL: time.Second, Owner: "bob"}); err != nil || r2.Acquired {
		t.Fatalf("bob's second Acquire within the wait = %+v, %v; want refused", r2, err)
	} else if r2.Remaining > r.Remaining {
		t.Fatalf("the wait grew from %v to %v: it counts from when bob first found the key free", r.Remaining, r2.Remaining)
	}
	time.Sleep(time.Until(seen.Add(r.Remaining + 50*time.Millisecond)))
	r, err = pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "bbbb:bob", TTL: time.Second, Owner: "bob"})
	if err != nil || !r.Acquired {
		t.Fatalf("bob's Acquire after the wait = %+v, %v; want acquired", r, err)
	}
	if int64(r.Fence) <= fa {
		t.Fatalf("bob's fence %d", r.Fence)
	}
	// A key freed by a release is taken at once, by a provider that saw
	// it held (its guard: a release newer than bob's fence) and by one
	// that never read it.
	if ok, err := pb.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "bbbb:bob"}); !ok || err != nil {
		t.Fatalf("bob's Release = %v, %v", ok, err)
	}
	pc := quarantined(t, cl, prefix)
	if r, err := pc.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "cccc:carol", TTL: time.Second, Owner: "carol"}); err != nil || !r.Acquired {
		t.Fatalf("carol's Acquire after bob's release = %+v, %v; want acquired at once", r, err)
	}
	if ok, err := pc.Release(ctx, locking.ReleaseRequest{Key: "k", Value: "cccc:carol"}); !ok || err != nil {
		t.Fatalf("carol's Release = %v, %v", ok, err)
	}
	if r, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "bbbb:bob", TTL: time.Second, Owner: "bob"}); err != nil || !r.Acquired {
		t.Fatalf("bob's Acquire after carol's release = %+v, %v; want acquired at once", r, err)
	}

	// Without the option, the revoked key is taken at once.
	if r, err := plain.Acquire(ctx, locking.AcquireRequest{Key: "p", Value: "dddd:dave", TTL: time.Second, Owner: "dave"}); err != nil || !r.Acquired {
		t.Fatalf("dave's Acquire = %+v, %v", r, err)
	}
	revokeHolder(t, cl, prefix, "p")
	if r, err := plain.Acquire(ctx, locking.AcquireRequest{Key: "p", Value: "eeee:erin", TTL: time.Second, Owner: "erin"}); err != nil || !r.Acquired {
		t.Fatalf("without the option, erin's Acquire of the revoked key = %+v, %v; want acquired at once", r, err)
	}
}

// TestQuarantine_N5_ResignRequestIsNoRelease: a resign request's note,
// newer than the holder's fence, does not make the key's expiry look like
// a release.
func TestQuarantine_N5_ResignRequestIsNoRelease(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	ctx := context.Background()
	pa, pb := quarantined(t, cl, prefix), quarantined(t, cl, prefix)
	if r, err := pa.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "aaaa:alice", TTL: time.Second, Owner: "alice"}); err != nil || !r.Acquired {
		t.Fatalf("alice's Acquire = %+v, %v", r, err)
	}
	if r, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "bbbb:bob", TTL: time.Second, Owner: "bob"}); err != nil || r.Acquired {
		t.Fatalf("bob's Acquire while alice holds = %+v, %v; want refused", r, err)
	}
	if err := pb.RequestResign(ctx, "k", "bob"); err != nil {
		t.Fatal(err)
	}
	revokeHolder(t, cl, prefix, "k")
	r, err := pb.Acquire(ctx, locking.AcquireRequest{Key: "k", Value: "bbbb:bob", TTL: time.Second, Owner: "bob"})
	if err != nil || r.Acquired || r.Remaining < 500*time.Millisecond {
		t.Fatalf("bob's Acquire after a resign request and a revocation = %+v, %v; want refused for about a lease", r, err)
	}
}
