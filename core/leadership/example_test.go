package leadership_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// An elector composes without a container: a lock, a role, options.
func ExampleNewElector() {
	lock, err := locking.New(memlock.New(), locking.DefaultOptions())
	if err != nil {
		panic(err)
	}
	e, err := leadership.NewElector("billing", lock, leadership.DefaultOptions())
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		panic(err)
	}
	if err := e.WaitForLeadership(ctx); err != nil {
		panic(err)
	}
	fmt.Println("leader:", e.IsLeader(), "term:", e.Term())

	token := e.Token() // leader-only work honours it
	if err := e.Stop(ctx); err != nil {
		panic(err)
	}
	fmt.Println("leader:", e.IsLeader(), "token:", token.Err())
	// Output:
	// leader: true term: 1
	// leader: false token: context canceled
}

// ResolveLockKey shows the consumer key without starting an election.
func ExampleOptions_ResolveLockKey() {
	o := leadership.DefaultOptions()
	key, _ := o.ResolveLockKey("scheduler", locking.DefaultMaxKeyLength)
	fmt.Println(key)

	o.LockKeyFormat = "{elections}:{role}"
	key, _ = o.ResolveLockKey("scheduler", locking.DefaultMaxKeyLength)
	fmt.Println(key)

	o.LockKey = "exact-{role}" // used literally
	key, _ = o.ResolveLockKey("scheduler", locking.DefaultMaxKeyLength)
	fmt.Println(key)

	o.RenewInterval = 9 * time.Second
	fmt.Println(o.Validate())
	// Output:
	// leader:scheduler
	// {elections}:scheduler
	// exact-{role}
	// leadership: invalid options: Options.RenewInterval 9s exceeds half of Options.Lease 15s
}

// Describe reports the composition without I/O.
func ExampleDescribe() {
	lo := locking.DefaultOptions()
	lo.Namespace = "billing"
	lock, _ := locking.New(memlock.New(), lo)
	o := leadership.DefaultOptions()
	o.LockKeyFormat = "election:eu:{role}"
	e, _ := leadership.NewElector("scheduler", lock, o, leadership.WithIdentity("node-1"))
	d := leadership.Describe(e)
	fmt.Println(d.LockKey)
	fmt.Println(d.ProviderKey)
	fmt.Println(d.Coordinated, d.WhenUncoordinated, d.Lease, d.RenewInterval, d.RetryInterval)
	fmt.Println(d.Identity, d.LockType)
	// Output:
	// election:eu:scheduler
	// billing:lock:election:eu:scheduler
	// true follow 15s 5s 2s
	// node-1 *locking.DistributedLock
}

// CheckLease is the strict T2 check a composition runs before starting.
func ExampleCheckLease() {
	lo := locking.DefaultOptions()
	lo.MaxLease = time.Minute
	lock, _ := locking.New(memlock.New(), lo)
	o := leadership.DefaultOptions()
	o.Lease = 10 * time.Minute
	fmt.Println(leadership.CheckLease("billing", o, lock))
	// Output:
	// leadership: role "billing": lease 10m0s exceeds locking max_lease 1m0s
}

// A process that runs many roles stops them together with StopAll: the
// roles it leads are released first, so other replicas take them over
// before the rest of the stop work is done.
func ExampleStopAll() {
	lock, err := locking.New(memlock.New(), locking.DefaultOptions())
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	var electors []*leadership.Elector
	for _, role := range []string{"billing", "reports", "cleanup"} {
		e, err := leadership.NewElector(role, lock, leadership.DefaultOptions())
		if err != nil {
			panic(err)
		}
		if err := e.Start(ctx); err != nil {
			panic(err)
		}
		if err := e.WaitForLeadership(ctx); err != nil {
			panic(err)
		}
		electors = append(electors, e)
	}
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	fmt.Println("stopped:", leadership.StopAll(stopCtx, electors...))
	fmt.Println("billing leads:", electors[0].IsLeader())
	// Output:
	// stopped: <nil>
	// billing leads: false
}

// A process owns its roles and the work attached to them: GoWork runs a
// loop while the role is this process's, and the leave stops the loop
// before the lease goes back.
func ExampleGoWork() {
	lock, err := locking.New(memlock.New(), locking.DefaultOptions())
	if err != nil {
		panic(err)
	}
	p, err := leadership.NewProcess(lock, leadership.ProcessOptions{Identity: "billing-1"})
	if err != nil {
		panic(err)
	}
	e, err := p.Elector("billing", leadership.DefaultOptions())
	if err != nil {
		panic(err)
	}
	leading, stopped := make(chan struct{}), make(chan struct{})
	err = p.Attach("billing", leadership.GoWork("reader", "invoices", func(ctx context.Context) {
		defer close(stopped)
		if e.WaitForLeadership(ctx) == nil {
			fmt.Println("invoicing as", e.Identity())
			close(leading)
		}
		<-ctx.Done()
	}))
	if err != nil {
		panic(err)
	}
	if err := p.Start(context.Background()); err != nil {
		panic(err)
	}
	<-leading
	if err := p.Leave(context.Background()); err != nil {
		panic(err)
	}
	<-stopped
	fmt.Println("left; leader:", e.IsLeader())
	// Output:
	// invoicing as billing-1
	// left; leader: false
}
