package etcdlock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/fencing"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
)

// termWrite runs a transaction guarded by term that puts key=value.
func termWrite(t *testing.T, cl *clientv3.Client, term etcdlock.Term, key, value string, extra ...clientv3.Cmp) (*clientv3.TxnResponse, error) {
	t.Helper()
	resp, err := cl.Txn(t.Context()).If(append(term.Cmps(), extra...)...).
		Then(clientv3.OpPut(key, value)).Else(term.Else()...).Commit()
	if err != nil {
		t.Fatalf("txn: %v", err)
	}
	return resp, term.Check(t.Context(), resp)
}

// TestTerm_N3_DeposedLeaderTransactionFailsNamingBothFences: a term's
// transaction commits while the term holds; once its lease ran out on the
// server (the holder stopped extending, as a paused process does) it
// fails, and once a successor holds the key the error names both fences.
func TestTerm_N3_DeposedLeaderTransactionFailsNamingBothFences(t *testing.T) {
	cl := newClient(t)
	prefix := prefixOf(t)
	l, p := newLock(t, cl, prefix, "n3")
	other, _ := newLock(t, cl, prefix, "n3")
	ctx := context.Background()
	ls, err := l.TryAcquireAs(ctx, "leader:r", time.Second, "a")
	if err != nil {
		t.Fatal(err)
	}
	fence := ls.(locking.Fenced).Fence()
	key, _ := l.ProviderKey("leader:r")
	term, err := p.Term(key, fence)
	if err != nil {
		t.Fatal(err)
	}
	data := prefix + "data"
	if resp, err := termWrite(t, cl, term, data, "1"); err != nil || !resp.Succeeded {
		t.Fatalf("write while the term holds = %v, %v", resp.Succeeded, err)
	}
	// The holder does not extend: the server revokes its lease.
	waitFree(t, other, "leader:r")
	_, err = termWrite(t, cl, term, data, "2")
	var te *etcdlock.TermError
	if !errors.As(err, &te) || !errors.Is(err, fencing.ErrStale) || !errors.Is(err, etcdlock.ErrTermEnded) {
		t.Fatalf("write after the lease ran out = %v, want a *TermError matching fencing.ErrStale", err)
	}
	if te.Held || te.Current != fence || !strings.Contains(err.Error(), "no lease") {
		t.Fatalf("TermError = %+v (%v), want no lease and the last fence %d", te, err, fence)
	}
	next, err := other.TryAcquireAs(ctx, "leader:r", time.Minute, "b")
	if err != nil {
		t.Fatal(err)
	}
	nf := next.(locking.Fenced).Fence()
	_, err = termWrite(t, cl, term, data, "3")
	if !errors.As(err, &te) || !te.Held || te.Current != nf || te.Fence != fence {
		t.Fatalf("write after the successor took over = %v (%+v), want fences %d and %d", err, te, fence, nf)
	}
	for _, f := range []uint64{fence, nf} {
		if !strings.Contains(err.Error(), strconv.FormatUint(f, 10)) {
			t.Fatalf("error %q does not name fence %d", err, f)
		}
	}
	r, err := cl.Get(ctx, data)
	if err != nil || string(r.Kvs[0].Value) != "1" {
		t.Fatalf("stored %v, %v; want only the first write", r.Kvs, err)
	}
	// The successor's own term holds; its own failed comparison is not a
	// term error.
	nterm, _ := p.Term(key, nf)
	resp, err := termWrite(t, cl, nterm, data, "4", clientv3.Compare(clientv3.Value(data), "=", "nope"))
	if err != nil || resp.Succeeded {
		t.Fatalf("write with a failing comparison of the caller = %v, %v; want not committed, no term error", resp.Succeeded, err)
	}
	// Without the Else reads, Check reads the key itself.
	resp, err = cl.Txn(ctx).If(term.Cmps()...).Then(clientv3.OpPut(data, "5")).Commit()
	if err != nil {
		t.Fatal(err)
	}
	if err := term.Check(ctx, resp); !errors.As(err, &te) || te.Current != nf {
		t.Fatalf("Check without the Else reads = %v, want the successor's fence %d", err, nf)
	}
}

// TestTerm_N3_BadInput: fence 0, a context without a fence and an invalid
// key are refused.
func TestTerm_N3_BadInput(t *testing.T) {
	p := newProvider(t, newClient(t), prefixOf(t))
	if _, err := p.Term("k", 0); !errors.Is(err, fencing.ErrZeroFence) {
		t.Fatalf("Term(fence 0) = %v, want ErrZeroFence", err)
	}
	if _, err := p.LeaderTerm(context.Background(), "k"); !errors.Is(err, etcdlock.ErrNoFence) {
		t.Fatalf("LeaderTerm without a fence = %v, want ErrNoFence", err)
	}
	if _, err := p.Term("", 1); !errors.Is(err, locking.ErrInvalidKey) {
		t.Fatalf("Term(\"\") = %v, want ErrInvalidKey", err)
	}
}

// waitFree waits until l reports nobody holding key.
func waitFree(t *testing.T, l *locking.DistributedLock, key string) {
	t.Helper()
	ch := make(chan locking.Event, 16)
	stop, err := l.Subscribe(key, func(e locking.Event) {
		select {
		case ch <- e:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	deadline := time.After(10 * time.Second)
	for {
		if _, held, err := l.Holder(context.Background(), key); err == nil && !held {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%q still held after 10s", key)
		}
	}
}
