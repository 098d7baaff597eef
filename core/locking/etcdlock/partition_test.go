package etcdlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
