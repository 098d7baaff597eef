package eventhub_test

import (
	"fmt"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/kit/eventhub"
)

// A provider that listens per key: Listen starts listening with a key's
// first subscriber, and the transport reports through the key's link.
func Example() {
	links := map[string]*eventhub.Link{} // the fake transport
	hub := eventhub.New(eventhub.Options{
		Listen: func(key string, l *eventhub.Link) func() {
			fmt.Println("listen", key)
			links[key] = l
			return func() { fmt.Println("unlisten", key) }
		},
	})
	defer hub.Close()

	stop, err := hub.Subscribe("billing", func(e locking.Event) {
		if e.Owner != "" {
			fmt.Println(e.Kind, "by", e.Owner)
			return
		}
		fmt.Println(e.Kind)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	l := links["billing"]
	l.Up() // the backend confirmed the subscription
	l.Publish(locking.Event{Kind: locking.EventAcquired, Owner: "replica-1"})
	l.Down() // the connection was lost
	stop()
	stop() // idempotent

	// Output:
	// listen billing
	// subscribed
	// acquired by replica-1
	// unsubscribed
	// unlisten billing
}
