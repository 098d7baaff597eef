// Package memlock is an in-process lock provider for tests, single-instance
// services, and the example's embedded default.
//
// # Semantics
//
// It has the semantics of the Redis provider inside one process: atomic
// set-if-absent with expiry, token-compared extend and release, the holder's
// remaining TTL on a refused acquire, release notification, holder lookup,
// and the monotonic state API. Expiry is lazy and measured with package
// time, so the provider starts no goroutine and is safe inside
// testing/synctest bubbles, where it runs on fake time.
//
// It coordinates goroutines of one process only: replicas in separate
// processes need the Redis provider.
package memlock
