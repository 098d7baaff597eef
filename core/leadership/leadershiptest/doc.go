// Package leadershiptest provides test doubles for code that depends on
// leadership.Leadership.
//
// # Fake
//
// Fake is a Leadership whose state the test sets: SetLeader(true) starts a
// term (Term+1, a fresh Token, OnChange called), SetLeader(false) ends it
// (Token cancelled, OnChange called). It does no I/O and starts no
// goroutine, so it works inside testing/synctest bubbles.
//
// # FaultLock
//
// FaultLock wraps a locking.Lock and injects faults per operation
// (transport errors, refusals, hangs until the context ends, panics),
// switchable at run time, so tests can drive an Elector through outages
// and lost leases on fake time.
package leadershiptest
