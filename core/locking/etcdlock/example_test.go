package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/fencing"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
)

// An elector over etcd. The example needs a cluster at the endpoints, so
// it is compiled but not run.
func ExampleNew() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://10.0.0.3:2379"},
		DialTimeout: 2 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cli.Close()
	p, err := etcdlock.New(cli, etcdlock.Options{Prefix: "billing/"})
	if err != nil {
		fmt.Println(err)
		return
	}
	lock, err := locking.New(p, locking.DefaultOptions()) // the lock owns p now: lock.Close closes it
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()
	e, err := leadership.NewElector("invoices", lock, leadership.DefaultOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := e.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = e.Stop(ctx) }()
}

// A prefix etcd's tools cannot show is refused, naming it.
func ExampleOptions_Validate() {
	err := etcdlock.Options{Prefix: "app\x00locks/"}.Validate()
	fmt.Println(errors.Is(err, etcdlock.ErrInvalidOptions))
	fmt.Println(err)
	// Output:
	// true
	// etcdlock: invalid options: Prefix "app\x00locks/": control character '\x00' at byte 3: want printable characters
}

// A leader's write that commits only while its term holds: the term's
// comparison goes into the leader's own etcd transaction. After the role
// moved on, the deposed leader's transaction fails, naming both fences.
// The example runs against the test run's etcd cluster.
func ExampleProvider_Term() {
	ctx := context.Background()
	cli, err := etcdtest.NewClient(cluster.Endpoints()...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cli.Close()
	p, err := etcdlock.New(cli, etcdlock.Options{Prefix: "example-term/"})
	if err != nil {
		fmt.Println(err)
		return
	}
	lock, err := locking.New(p, locking.Options{Namespace: "billing"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()
	key, _ := lock.ProviderKey("leader:invoices")

	ls, err := lock.TryAcquireAs(ctx, "leader:invoices", 10*time.Second, "replica-a")
	if err != nil {
		fmt.Println(err)
		return
	}
	term, err := p.Term(key, ls.(locking.Fenced).Fence())
	if err != nil {
		fmt.Println(err)
		return
	}
	write := func(value string) error {
		resp, err := cli.Txn(ctx).
			If(term.Cmps()...).
			Then(clientv3.OpPut("example-term/invoice/42", value)).
			Else(term.Else()...).
			Commit()
		if err != nil {
			return err
		}
		return term.Check(ctx, resp)
	}
	fmt.Println("while leading:", write("sent"))

	// The role moves on: released here (a lease that ran out or was
	// revoked ends the term the same way), then taken by another replica.
	_ = ls.Release(ctx)
	next, err := lock.TryAcquireAs(ctx, "leader:invoices", 10*time.Second, "replica-b")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = next.Release(ctx) }()
	err = write("sent twice")
	var te *etcdlock.TermError
	fmt.Println("deposed:", errors.Is(err, fencing.ErrStale), errors.As(err, &te))
	fmt.Println("the successor's fence is larger:", te.Current == next.(locking.Fenced).Fence() && te.Current > te.Fence)
	r, _ := cli.Get(ctx, "example-term/invoice/42")
	fmt.Printf("stored: %s\n", r.Kvs[0].Value)
	// Output:
	// while leading: <nil>
	// deposed: true true
	// the successor's fence is larger: true
	// stored: sent
}
