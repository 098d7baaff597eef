package etcdtest_test

import (
	"context"
	"testing"
	"time"

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
	put := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		// A request in flight when the leader dies fails (etcd asks the
		// client to retry): retry until the deadline.
		for {
			_, err := cl.Put(ctx, "k", what)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("put %s: %v", what, err)
			}
		}
		r, err := cl.Get(ctx, "k")
		if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != what {
			t.Fatalf("get after put %s = %v, %v", what, r, err)
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
