package etcdlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// streamCountingClient returns a client of the shared cluster that counts
// the LeaseKeepAlive streams opened over it, closed when t ends.
func streamCountingClient(t *testing.T) (*clientv3.Client, *atomic.Int64) {
	t.Helper()
	var opened atomic.Int64
	count := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if method == "/etcdserverpb.Lease/LeaseKeepAlive" {
			opened.Add(1)
		}
		return streamer(ctx, desc, cc, method, opts...)
	}
	cl, err := clientv3.New(clientv3.Config{
		Endpoints:   cluster.Cluster(t).Endpoints(),
		DialTimeout: 2 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainStreamInterceptor(count)},
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl, &opened
}

// TestKeepAlive_N4_RenewalsReuseAStream: renewals one after another go
// over one stream, each extending the lease to its full TTL; a renewal
// that finds its idle stream broken (a member restarted meanwhile) is
// sent again on a new stream and succeeds; a lease that is gone is
// reported as ErrLeaseNotFound, and its stream kept; a renewal whose
// context has ended fails with it.
func TestKeepAlive_N4_RenewalsReuseAStream(t *testing.T) {
	cl, opened := streamCountingClient(t)
	p := newProvider(t, cl, prefixOf(t))
	ctx := context.Background()
	g, err := cl.Grant(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = cl.Revoke(context.Background(), g.ID) })

	for i := range 20 {
		r, err := p.KeepAlive(ctx, g.ID)
		if err != nil || r.TTL != 5 || r.ID != g.ID {
			t.Fatalf("renewal %d = %+v, %v; want the lease renewed for 5s", i, r, err)
		}
	}
	if n := opened.Load(); n != 1 {
		t.Fatalf("20 renewals one after another opened %d streams; want 1", n)
	}
	if n := p.IdleStreams(); n != 1 {
		t.Fatalf("%d idle streams after the renewals; want 1", n)
	}

	p.BreakIdleStreams()
	if r, err := p.KeepAlive(ctx, g.ID); err != nil || r.TTL != 5 {
		t.Fatalf("renewal over a broken idle stream = %+v, %v; want renewed on a new stream", r, err)
	}
	if n := opened.Load(); n != 2 {
		t.Fatalf("%d streams opened after the broken one; want 2", n)
	}

	gone, err := cl.Grant(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Revoke(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.KeepAlive(ctx, gone.ID); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		t.Fatalf("renewal of a revoked lease = %v; want ErrLeaseNotFound", err)
	}
	if n := opened.Load(); n != 2 {
		t.Fatalf("%d streams opened after a lease not found; want 2 (the reply leaves the stream usable)", n)
	}

	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.KeepAlive(done, g.ID); !errors.Is(err, context.Canceled) {
		t.Fatalf("renewal on an ended context = %v; want context.Canceled", err)
	}
}

// TestKeepAlive_N4_ConcurrentRenewalsEachHaveAStream: renewals at once
// never share a stream (each reply answers its own request); the streams
// are kept for later renewals, at most 16, and Close ends them.
func TestKeepAlive_N4_ConcurrentRenewalsEachHaveAStream(t *testing.T) {
	cl, opened := streamCountingClient(t)
	p := newProvider(t, cl, prefixOf(t))
	ctx := context.Background()
	const leases = 24
	ids := make([]clientv3.LeaseID, leases)
	for i := range ids {
		g, err := cl.Grant(ctx, int64(3+i%3))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = g.ID
		t.Cleanup(func() { _, _ = cl.Revoke(context.Background(), g.ID) })
	}
	for round := range 3 {
		errs := make(chan error, leases)
		for i, id := range ids {
			go func() {
				r, err := p.KeepAlive(ctx, id)
				if err == nil && (r.ID != id || r.TTL != int64(3+i%3)) {
					err = errors.New("a reply for another lease or TTL")
				}
				errs <- err
			}()
		}
		for range ids {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	if n := p.IdleStreams(); n > 16 || n == 0 {
		t.Fatalf("%d idle streams after concurrent renewals; want 1 to 16", n)
	}
	if n := opened.Load(); n > 3*leases {
		t.Fatalf("%d streams opened for %d renewals", n, 3*leases)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if n := p.IdleStreams(); n != 0 {
		t.Fatalf("%d idle streams after Close; want 0", n)
	}
}

// BenchmarkKeepAlive renews one lease over the shared three-member
// cluster, side by side: the client's KeepAliveOnce (a stream opened per
// renewal) and the provider's keep-alive (a stream kept and reused).
//
//	go test -run '^$' -bench KeepAlive -benchtime 2000x ./core/locking/etcdlock
func BenchmarkKeepAlive(b *testing.B) {
	cl := newClient(b)
	p := newProvider(b, cl, cluster.NewPrefix("bench-keepalive"))
	ctx := context.Background()
	g, err := cl.Grant(ctx, 5)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = cl.Revoke(context.Background(), g.ID) })
	b.Run("client-KeepAliveOnce", func(b *testing.B) {
		for b.Loop() {
			if _, err := cl.KeepAliveOnce(ctx, g.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("provider-reused-stream", func(b *testing.B) {
		for b.Loop() {
			if _, err := p.KeepAlive(ctx, g.ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}
