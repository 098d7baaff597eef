package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
)

// A lock over Redis or Valkey. The example needs a server on
// localhost:6379, so it is compiled but not run.
func Example() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer client.Close()
	provider := redislock.New(client)
	defer provider.Close()

	o := locking.DefaultOptions()
	o.Namespace = "billing"
	lock, err := locking.New(provider, o)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	lease, err := lock.TryAcquire(ctx, "invoices", 30*time.Second)
	var held *locking.HeldError
	switch {
	case errors.As(err, &held):
		fmt.Printf("held by someone else for %v more\n", held.Remaining)
		return
	case err != nil:
		fmt.Println(err)
		return
	}
	defer lease.Release(ctx)
	fmt.Println("holding", lease.Key())
}

// A provider without a client reports it on every operation instead of
// panicking.
func Example_nilClient() {
	provider := redislock.New(nil)
	defer provider.Close()
	lock, err := locking.New(provider, locking.DefaultOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = lock.TryAcquire(context.Background(), "invoices", time.Minute)
	fmt.Println(err)
	fmt.Println(errors.Is(err, redislock.ErrNilClient))
	// Output:
	// locking: acquire "invoices": redislock: nil client
	// true
}

// Keys with UseHashTags: every key of a namespace hashes to the
// namespace's Redis Cluster slot.
func ExampleNew_hashTags() {
	o := locking.DefaultOptions()
	o.Namespace = "billing"
	o.UseHashTags = true
	lock, err := locking.New(redislock.New(nil), o)
	if err != nil {
		fmt.Println(err)
		return
	}
	key, _ := lock.ProviderKey("invoices")
	fmt.Println(key)
	// Output:
	// {billing}:lock:invoices
}

// Options for the edges of the lease tier: quarantine after the server
// lost its data, and replica acknowledgement for failovers. A negative
// value is an error naming the field.
func ExampleNewWithOptions() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer client.Close()
	_, err := redislock.NewWithOptions(client, redislock.Options{MinReplicas: -1})
	fmt.Println(err)
	provider, err := redislock.NewWithOptions(client, redislock.Options{Quarantine: true, MinReplicas: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer provider.Close()
	fmt.Println("min replicas:", provider.MinReplicas())
	// Output:
	// redislock: Options.MinReplicas -1 must not be negative
	// min replicas: 1
}

// A client built with Dialer reconnects within milliseconds after a Redis
// restart, so a leader verifies its lease at once (the configuration's
// clients are built this way).
func ExampleDialer() {
	client := redis.NewClient(&redis.Options{
		Addr:        "localhost:6379",
		Dialer:      redislock.Dialer(nil), // or the client's *tls.Config
		DialTimeout: 5 * time.Second,       // how long a dial waits for a restarting server
	})
	defer client.Close()
	p := redislock.New(client)
	defer p.Close()
	fmt.Println(p != nil)
	// Output: true
}
