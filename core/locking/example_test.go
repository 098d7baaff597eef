package locking_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// A lock over the in-process provider: one caller holds the key, a second
// is refused and told how long the holder has left.
func Example() {
	opts := locking.DefaultOptions()
	opts.Namespace = "billing"
	lock, err := locking.New(memlock.New(), opts)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	lease, err := lock.TryAcquire(ctx, "invoices", 30*time.Second)
	if err != nil {
		panic(err)
	}
	key, _ := lock.ProviderKey("invoices")
	fmt.Println("held:", lease.Key(), "stored as", key)

	_, err = lock.TryAcquire(ctx, "invoices", 30*time.Second)
	var held *locking.HeldError
	fmt.Println("second caller refused:", errors.Is(err, locking.ErrNotAcquired), errors.As(err, &held) && held.Remaining > 0)

	if err := lease.Release(ctx); err != nil {
		panic(err)
	}
	fmt.Println("stale release:", errors.Is(lease.Release(ctx), locking.ErrLeaseLost))
	// Output:
	// held: invoices stored as billing:lock:invoices
	// second caller refused: true true
	// stale release: true
}

// Acquire waits for the key and keeps the lease extended until Release.
func ExampleDistributedLock_Acquire() {
	lock, err := locking.New(memlock.New(), locking.DefaultOptions())
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, err := lock.Acquire(ctx, "migrations", 10*time.Second)
	if err != nil {
		panic(err)
	}
	defer h.Release(context.Background())
	select {
	case <-h.Done():
		fmt.Println("lost the lock: stop working")
	default:
		fmt.Println("holding", h.Key())
	}
	// Output: holding migrations
}

// Keys are validated before anything reaches the provider.
func ExampleCheckKey() {
	fmt.Println(locking.CheckKey("leader:billing", 512))
	fmt.Println(locking.CheckKey("leader billing", 512))
	// Output:
	// <nil>
	// locking: invalid key "leader billing": contains whitespace ' '
}

// A disabled lock grants everyone a placeholder and says so.
func ExampleOptions_disabled() {
	opts := locking.DefaultOptions()
	opts.Disabled = true
	lock, _ := locking.New(nil, opts)
	_, err1 := lock.TryAcquire(context.Background(), "k", time.Second)
	_, err2 := lock.TryAcquire(context.Background(), "k", time.Second)
	fmt.Println(err1, err2, lock.Coordinated())
	// Output: <nil> <nil> false
}

// Fences: every acquisition of a key gets a larger fence than the last,
// whoever holds it; a store that refuses stale fences uses it to reject a
// deposed holder's late writes. Inspect shows the key as operators see it.
func ExampleFenced() {
	lock, err := locking.New(memlock.New(), locking.DefaultOptions())
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	first, err := lock.TryAcquireAs(ctx, "leader:billing", time.Minute, "replica-a")
	if err != nil {
		panic(err)
	}
	f1 := first.(locking.Fenced).Fence()
	if err := first.Release(ctx); err != nil {
		panic(err)
	}
	second, err := lock.TryAcquireAs(ctx, "leader:billing", time.Minute, "replica-b")
	if err != nil {
		panic(err)
	}
	f2 := second.(locking.Fenced).Fence()
	fmt.Println("second fence larger:", f2 > f1)

	_, err = lock.TryAcquireAs(ctx, "leader:billing", time.Minute, "replica-c")
	var held *locking.HeldError
	fmt.Println("refused, held by:", errors.As(err, &held), held.Owner)

	st, err := lock.Inspect(ctx, "leader:billing")
	if err != nil {
		panic(err)
	}
	fmt.Println("holder:", st.Holder.Owner, "fence is the holder's:", st.Fence == f2)
	for _, p := range st.Participants {
		fmt.Println("participant:", p.Owner)
	}
	// Output:
	// second fence larger: true
	// refused, held by: true replica-b
	// holder: replica-b fence is the holder's: true
	// participant: replica-a
	// participant: replica-b
	// participant: replica-c
}

// required hides every optional capability of the provider it wraps: a
// backend with the three required methods only.
type required struct{ p *memlock.Provider }

func (r required) Acquire(ctx context.Context, a locking.AcquireRequest) (locking.AcquireResult, error) {
	return r.p.Acquire(ctx, a)
}

func (r required) Extend(ctx context.Context, e locking.ExtendRequest) (locking.ExtendResult, error) {
	return r.p.Extend(ctx, e)
}

func (r required) Release(ctx context.Context, q locking.ReleaseRequest) (bool, error) {
	return r.p.Release(ctx, q)
}

// A consumer reads a lock's optional capabilities once, as values: a
// capability the lock lacks is nil, so there is nothing to call that
// could answer "not supported".
func ExampleFeaturesOf() {
	full, _ := locking.New(memlock.New(), locking.Options{})
	basic, _ := locking.New(required{memlock.New()}, locking.Options{})
	for _, l := range []*locking.DistributedLock{full, basic} {
		f := locking.FeaturesOf(l)
		if f.Events == nil {
			fmt.Println("no events: poll on the retry interval")
			continue
		}
		stop, err := f.Events.Subscribe("leader:billing", func(locking.Event) {})
		fmt.Println("subscribed:", err == nil)
		stop()
	}
	// Output:
	// subscribed: true
	// no events: poll on the retry interval
}

// A lock reports what its provider can do, found once by New; a method of
// a capability the provider lacks says so instead of doing nothing.
func ExampleDistributedLock_Capabilities() {
	full, _ := locking.New(memlock.New(), locking.Options{})
	fmt.Printf("%+v\n", full.Capabilities())

	basic, _ := locking.New(required{memlock.New()}, locking.Options{})
	fmt.Printf("%+v\n", basic.Capabilities())
	err := basic.RequestResign(context.Background(), "leader:billing", "")
	fmt.Println(errors.Is(err, locking.ErrNotSupported), err)
	// Output:
	// {Events:true Participants:true Inspect:true Resign:true JobSlots:true Durable:false}
	// {Events:false Participants:false Inspect:false Resign:false JobSlots:false Durable:false}
	// true locking: resign "leader:billing": locking: not supported by this lock
}
