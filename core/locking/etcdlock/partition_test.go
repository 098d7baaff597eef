package etcdlock_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
)

// TestProvider_N5_CutOffMemberRefusesAtOnce: while a member is cut off from
// the others and knows it has no raft leader, a client that reaches it and
// a healthy member acquires, extends, lists participants and releases
// without waiting for its deadline: the cut-off member refuses at once and
// the request goes to the healthy member. Before, a request the client
// sent to the cut-off member (every other one: the client balances its
// requests over its endpoints) waited until the caller gave up.
func TestProvider_N5_CutOffMemberRefusesAtOnce(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{PeerProxy: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cut, healthy *etcdtest.Member
	for _, m := range c.Members() {
		if m != leader && cut == nil {
			cut = m
		} else if m != leader {
			healthy = m
		}
	}
	cl, err := etcdtest.NewClient(cut.Endpoint(), healthy.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p, err := etcdlock.New(cl, etcdlock.Options{Prefix: "cutoff/"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := cut.Isolate(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cut.Rejoin() }()
	// Wait until the cut-off member knows it has no leader (an election
	// timeout or two): before that it cannot know, and holds requests.
	for {
		st, err := cl.Status(ctx, cut.Endpoint())
		if err != nil {
			t.Fatal(err)
		}
		if st.Leader == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the cut-off member still reports a leader")
		case <-time.After(20 * time.Millisecond):
		}
	}
	// Each request has far longer than a healthy member needs; a request
	// held by the cut-off member would run out of it (etcd holds it for
	// five seconds and more).
	op := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 3*time.Second) }
	for i := range 4 {
		key := fmt.Sprintf("k%d", i)
		value, owner := fmt.Sprintf("v%d", i), fmt.Sprintf("o%d", i)
		octx, ocancel := op()
		res, err := p.Acquire(octx, locking.AcquireRequest{Key: key, Value: value, TTL: 2 * time.Second, Owner: owner, ParticipantTTL: 4 * time.Second})
		ocancel()
		if err != nil || !res.Acquired {
			t.Fatalf("acquire %s with a member cut off = %+v, %v; want acquired", key, res, err)
		}
		for j := range 2 {
			octx, ocancel = op()
			ext, err := p.Extend(octx, locking.ExtendRequest{Key: key, Value: value, TTL: 2 * time.Second, Owner: owner, ParticipantTTL: 4 * time.Second})
			ocancel()
			if err != nil || !ext.Extended {
				t.Fatalf("extension %d of %s with a member cut off = %+v, %v; want extended", j, key, ext, err)
			}
		}
		octx, ocancel = op()
		ps, err := p.Participants(octx, key)
		ocancel()
		if err != nil || len(ps) != 1 || ps[0].Owner != owner {
			t.Fatalf("participants of %s with a member cut off = %v, %v; want %s", key, ps, err, owner)
		}
		octx, ocancel = op()
		ok, err := p.Release(octx, locking.ReleaseRequest{Key: key, Value: value})
		ocancel()
		if err != nil || !ok {
			t.Fatalf("release %s with a member cut off = %v, %v; want released", key, ok, err)
		}
	}
}

// TestExtend_N2_SteadyRenewalIsOneRequest: an elector's renewal within a
// lease of the latest participants read is the keep-alive alone; the
// participants are read again once that read is a lease old, and the
// renewal still reports them.
func TestExtend_N2_SteadyRenewalIsOneRequest(t *testing.T) {
	var n atomic.Int64
	count := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &countedStream{ClientStream: s, n: &n}, nil
	}
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		n.Add(1)
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	cl, err := clientv3.New(clientv3.Config{
		Endpoints: cluster.Cluster(t).Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(count)},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	prefix := prefixOf(t)
	p := newProvider(t, cl, prefix)
	ctx := context.Background()
	const lease = 3 * time.Second
	began := time.Now() // no later than the acquisition's read
	res, err := p.Acquire(ctx, locking.AcquireRequest{Key: "job", Value: "v", TTL: lease, Owner: "a", ParticipantTTL: 2 * lease})
	if err != nil || !res.Acquired {
		t.Fatalf("Acquire = %+v, %v", res, err)
	}
	// Another participant, registered through a provider of its own.
	other := newProvider(t, newClient(t), prefix)
	if _, err := other.Acquire(ctx, locking.AcquireRequest{Key: "job", Value: "w", TTL: lease, Owner: "b", ParticipantTTL: 2 * lease}); err != nil {
		t.Fatal(err)
	}
	extend := func() locking.ExtendResult {
		t.Helper()
		ext, err := p.Extend(ctx, locking.ExtendRequest{Key: "job", Value: "v", TTL: lease, Owner: "a", ParticipantTTL: 2 * lease})
		if err != nil || !ext.Extended {
			t.Fatalf("Extend = %+v, %v", ext, err)
		}
		return ext
	}
	before := n.Load()
	const renewals = 4
	for range renewals {
		extend()
	}
	sent := n.Load() - before
	if time.Since(began) >= lease {
		t.Skipf("%d renewals took %v, longer than the lease: the machine is too slow to count them", renewals, time.Since(began))
	}
	// Each renewal is one keep-alive; the participants' session may be
	// refreshed once beside them (at most every 500ms, shared by every
	// key of the provider).
	if sent > renewals+1 {
		t.Fatalf("%d renewals within a lease sent %d requests, want at most %d", renewals, sent, renewals+1)
	}
	// Once the read is a lease old, a renewal reads again and reports
	// the other participant.
	for time.Since(began) <= lease {
		time.Sleep(lease / 6)
		extend()
	}
	if ext := extend(); ext.Participants != 2 {
		t.Fatalf("Participants after a lease = %d, want 2 (a and b)", ext.Participants)
	}
}

// countedStream counts the messages sent on a stream.
type countedStream struct {
	grpc.ClientStream
	n *atomic.Int64
}

func (s *countedStream) SendMsg(m any) error {
	s.n.Add(1)
	return s.ClientStream.SendMsg(m)
}
