package etcdtest_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
)

// TestCluster_N5_MemberFaults: a three-member cluster keeps serving
// linearizable writes with its leader killed, with a member paused, and
// after the killed member restarts.
func TestCluster_N5_MemberFaults(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{})
	if n := len(c.Members()); n != 3 {
		t.Fatalf("members = %d, want 3", n)
	}
	cl, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// A request in flight when the leader dies fails (etcd asks the
	// client to retry), and one sent to a paused member waits: each
	// attempt gets a few seconds, retried until the deadline.
	put := func(what string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_, err := cl.Put(ctx, "k", what)
			var r *clientv3.GetResponse
			if err == nil {
				r, err = cl.Get(ctx, "k")
			}
			cancel()
			if err == nil && len(r.Kvs) == 1 && string(r.Kvs[0].Value) == what {
				return
			}
			if err == nil {
				t.Fatalf("get after put %s = %v", what, r.Kvs)
			}
			if time.Now().After(deadline) {
				t.Fatalf("put %s: %v", what, err)
			}
		}
	}
	put("start")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader.Kill()
	if leader.Running() {
		t.Fatal("the killed member still runs")
	}
	put("leader killed")
	next, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatal("the killed member is still reported as leader")
	}
	if err := leader.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	var other *etcdtest.Member
	for _, m := range c.Members() {
		if m != next {
			other = m
			break
		}
	}
	if err := other.Pause(); err != nil {
		t.Fatal(err)
	}
	if !other.Paused() {
		t.Fatal("Paused = false after Pause")
	}
	put("member paused")
	if err := other.Resume(); err != nil {
		t.Fatal(err)
	}
	put("member resumed")
}

// TestCluster_N5_IsolatedMember: with the peer traffic through proxies,
// a leader cut off from the others loses its leadership: the others elect
// another and keep serving writes, the isolated member cannot serve a
// linearizable read, and once it rejoins it serves the writes it missed.
func TestCluster_N5_IsolatedMember(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{PeerProxy: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := c.ClientBut(leader)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := leader.Isolate(); err != nil {
		t.Fatal(err)
	}
	if !leader.Isolated() {
		t.Fatal("Isolated = false after Isolate")
	}
	for {
		pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := cl.Put(pctx, "k", "while cut off")
		pcancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no write without the isolated leader: %v", err)
		}
	}
	next, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatal("the isolated member is reported as leader")
	}
	alone, err := etcdtest.NewClient(leader.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close()
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = alone.Get(rctx, "k")
	rcancel()
	if err == nil {
		t.Fatal("the isolated member served a linearizable read")
	}
	if err := leader.Rejoin(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	r, err := alone.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "while cut off" {
		t.Fatalf("the rejoined member reads %v, want the write it missed", r.Kvs)
	}
}

// TestCluster_N5_IsolateNeedsPeerProxy: Isolate of a cluster launched
// without Options.PeerProxy is an error, not a silent no-op.
func TestCluster_N5_IsolateNeedsPeerProxy(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{Members: 1})
	m := c.Members()[0]
	if err := m.Isolate(); err == nil {
		t.Fatal("Isolate without PeerProxy: no error")
	}
	if m.Isolated() {
		t.Fatal("Isolated = true without PeerProxy")
	}
}

// TestCluster_N1_EnableAuth: after EnableAuth a client without
// credentials is refused, the user writes under its prefix and is
// refused outside it, and a wrong password is refused.
func TestCluster_N1_EnableAuth(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{Members: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.EnableAuth(ctx, "svc", "svc-pw", "app/"); err != nil {
		t.Fatal(err)
	}
	anon, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, err := anon.Put(ctx, "app/x", "1"); err == nil {
		t.Error("a client without credentials wrote with authentication on")
	}
	as := func(password string) (*clientv3.Client, error) {
		cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), Username: "svc", Password: password, DialTimeout: 2 * time.Second})
		if err == nil {
			t.Cleanup(func() { _ = cli.Close() })
		}
		return cli, err
	}
	svc, err := as("svc-pw")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Put(ctx, "app/x", "1"); err != nil {
		t.Errorf("svc under its prefix: %v", err)
	}
	if _, err := svc.Put(ctx, "other/x", "1"); err == nil {
		t.Error("svc wrote outside its prefix")
	}
	// The client authenticates when it connects, or at its first request.
	if wrong, err := as("wrong"); err == nil {
		if _, err := wrong.Put(ctx, "app/x", "1"); err == nil {
			t.Error("a wrong password wrote")
		}
	}
}
