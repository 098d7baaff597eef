package roundtrip_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/roundtrip"
)

// get is a backend's call: the key to read and, once answered, its value.
type get struct {
	key, value string
}

// A provider supplies the transport: one round trip for a batch of calls
// (here a map stands for the server), each call's outcome recorded in the
// call. A lone call is sent at once by its caller.
func Example() {
	server := map[string]string{"orders-leader": "node-1"}
	q := roundtrip.New(func(ctx context.Context, calls []get) bool {
		for i := range calls {
			calls[i].value = server[calls[i].key]
		}
		return true // the server answered
	}, roundtrip.MaxCalls(1024))

	c, err := q.Do(context.Background(), get{key: "orders-leader"})
	fmt.Println(c.value, err)
	// Output: node-1 <nil>
}

// A call whose context ends before it leaves the queue is never sent.
func ExampleNotSentError() {
	onWire, reply := make(chan struct{}), make(chan struct{})
	q := roundtrip.New(func(ctx context.Context, calls []get) bool {
		if calls[0].key == "slow" {
			close(onWire)
			<-reply
		}
		return true
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = q.Do(context.Background(), get{key: "slow"})
	}()
	<-onWire // a round trip is in flight: the next call queues

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := q.Do(ctx, get{key: "orders-leader"})
	var ns *roundtrip.NotSentError
	fmt.Println(err)
	fmt.Println(errors.As(err, &ns), errors.Is(err, context.Canceled))
	// The server answered nothing while the call waited: an outage, not a
	// saturated process.
	fmt.Println(errors.Is(err, locking.ErrNotSent))

	close(reply)
	<-done
	// Output:
	// context canceled: not sent
	// true true
	// false
}
