// Package eventhub is the per-key event hub a lock provider serves
// locking.Subscriber from (L7, X2): the registry of subscribers per key,
// their stop functions, the order and serialisation of deliveries, the
// state of the subscription (live or dropped), and the hooks that start
// and stop listening to a key. The provider keeps only its transport: how
// it listens (LISTEN, SUBSCRIBE, a watch) and how it decodes a
// notification into a key and a locking.Event. memlock, pglock, etcdlock
// and redislock are built on it, and a provider outside this repository
// can be too.
//
// # Use
//
// Make one Hub per provider with New and answer Subscribe with
// Hub.Subscribe. Then report what the transport sees, in one of two
// shapes:
//
//   - One link for every key (one connection that hears all keys, or an
//     in-process provider that is always live): call Hub.Up when it is
//     live, Hub.Down when it is lost, and Hub.Publish(key, event) for each
//     notification. Options.Listen may start the connection lazily.
//   - One link per key (a channel or a watch per key): Options.Listen is
//     called with the key's first subscriber and returns the function
//     that stops listening, called with the last. Report through the
//     Link it is given: Link.Up once the backend confirmed the
//     subscription, Link.Publish per event, Link.Down when it was lost.
//     Reports through a link that ended are ignored.
//
// Call Hub.Close from the provider's Close, before stopping the
// transport.
//
// # Guarantees
//
// A subscriber's first event is locking.EventSubscribed, delivered before
// Subscribe returns when the key is live already, else when it becomes
// live; a lost link delivers locking.EventUnsubscribed to the subscribers
// that were live, and the next confirmation EventSubscribed again. Every
// callback runs with the hub's mutex held, so the deliveries to one
// subscriber never overlap and keep the order of the reports; a callback
// must return at once and must not call the hub or its provider. Close
// delivers EventUnsubscribed to live subscribers and forgets them all.
// The hub starts no goroutine, and delivering an event does not allocate.
//
// Rule ids (L7, X2) are explained in docs/rules.md.
package eventhub
