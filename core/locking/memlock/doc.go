// Package memlock is an in-process lock provider for tests, single-instance
// services, and the example's embedded default.
//
// # Semantics
//
// It has the semantics of the Redis provider inside one process: atomic
// set-if-absent with expiry, token-compared extend and release, the holder's
// remaining TTL and owner on a refused acquire, fences (max(last + 1, now in
// microseconds), kept per key for the provider's lifetime: G1), events
// (acquired, released, resign; a watch is live at once and never drops),
// participants (P1), inspection, release notification, holder lookup, and
// the monotonic state API. Expiry is lazy and measured with package
// time, so the provider starts no goroutine and is safe inside
// testing/synctest bubbles, where it runs on fake time.
//
// It coordinates goroutines of one process only: replicas in separate
// processes need the Redis provider.
package memlock
