package fencing_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/fencing"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
)

// A holder writes through the gate with its lease's fence; a write that
// arrives after a successor's is refused. Inside a leader's work the fence
// comes from the term's context instead: fence, ok :=
// leadership.FenceFrom(ctx). The example needs a server on localhost:6379,
// so it is compiled but not run.
func Example() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer client.Close()
	gate, err := fencing.New(client)
	if err != nil {
		fmt.Println(err)
		return
	}
	lock, err := redislock.NewLock(client, locking.DefaultOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lock.Close()

	ctx := context.Background()
	lease, err := lock.TryAcquire(ctx, "daily-report", 30*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lease.Release(ctx)
	fenced, ok := lease.(locking.Fenced)
	if !ok {
		fmt.Println("this lock issues no fences")
		return
	}

	// ... build the report; the process may be paused here past its lease ...

	err = gate.Set(ctx, "daily-report", fenced.Fence(), "the report")
	switch {
	case errors.Is(err, fencing.ErrStale):
		fmt.Println("a successor has written; this term is over:", err)
	case err != nil:
		fmt.Println(err)
	default:
		fmt.Println("written with fence", fenced.Fence())
	}
}

// The keys of a resource share the hash tag {resource}, so they live in one
// Redis Cluster slot.
func ExampleGate_Keys() {
	gate, err := fencing.New(nil, fencing.WithPrefix("billing:fence:"))
	if err != nil {
		fmt.Println(err)
		return
	}
	k, err := gate.Keys("invoices/2026-12")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(k.Gate)
	fmt.Println(k.Value)
	fmt.Println(k.Log)
	// Output:
	// billing:fence:{invoices/2026-12}:gate
	// billing:fence:{invoices/2026-12}:value
	// billing:fence:{invoices/2026-12}:log
}

// Fence 0 means "no fence" and is refused before anything is sent.
func ExampleErrZeroFence() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379"}) // never dialled
	defer client.Close()
	gate, err := fencing.New(client)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = gate.Set(context.Background(), "daily-report", 0, "the report")
	fmt.Println(err)
	fmt.Println(errors.Is(err, fencing.ErrZeroFence))
	// Output:
	// fencing: fence 0 is not a fence (fences start at 1): set resource "daily-report"
	// true
}

// A refused write is a *StaleError carrying both fences.
func ExampleStaleError() {
	var err error = &fencing.StaleError{Resource: "daily-report", Fence: 5, Highest: 6}
	var stale *fencing.StaleError
	if errors.As(err, &stale) {
		fmt.Println(errors.Is(err, fencing.ErrStale), stale.Fence, stale.Highest)
	}
	fmt.Println(err)
	// Output:
	// true 5 6
	// fencing: resource "daily-report": fence 5 is stale: fence 6 was admitted
}

// A gate without a client reports it on every operation instead of
// panicking.
func Example_nilClient() {
	gate, err := fencing.New(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = gate.Set(context.Background(), "daily-report", 7, "the report")
	fmt.Println(err)
	// Output:
	// fencing: nil client
}
