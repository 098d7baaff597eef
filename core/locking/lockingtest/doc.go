// Package lockingtest is the conformance suite for lock providers: one set
// of checks, cited by DESIGN.md rule (L1–L8), run against every backend
// (memlock and redislock) so they keep the same semantics.
//
// # Use
//
// A backend's test supplies a Config whose New returns a fresh Backend for
// every check, and calls Run:
//
//	func TestConformance(t *testing.T) {
//		lockingtest.Run(t, lockingtest.Config{
//			New:      func(t *testing.T) lockingtest.Backend { return newBackend(t) },
//			Synctest: true, // in-process backends only
//		})
//	}
//
// # Checks
//
// Exclusivity (also under concurrent attempts), the holder's remaining TTL
// on refusal, expiry, stale-token extension and release refused with
// ErrLeaseLost, extension after expiry refused, cancelled contexts leaving
// no lease, odd keys (quotes, brackets, "]]--", unicode, braces) stored
// verbatim, invalid keys refused with ErrInvalidKey naming the key, leases
// capped at MaxLease, zero or negative leases refused, disabled mode writing
// nothing, release notifications, holder lookup, monotonic state, Acquire
// waiting and waking on release, automatic extension stopping at MaxHold;
// fences strictly increasing across holders and kept by extensions (G1),
// the holder's owner on refusal (P2), events (acquired with the owner,
// released, resign, subscription state), participants (registered by
// acquisitions, refused ones included, and extensions; Since kept; gone
// after two leases or at Deregister: P1), Inspect and Keys (O1). These
// last checks need the optional provider interfaces (ProviderAcquirer,
// ProviderEvents, ProviderParticipants, ProviderInspector) that memlock and
// redislock implement.
//
// # Time
//
// With Config.Synctest every check runs in a testing/synctest bubble: the
// expiry checks then take no real time. Network backends run on real time
// with short leases (Config.Short, 50ms by default); no check asserts on how
// fast anything is, only on what happens, with generous timeouts that fail
// a broken backend instead of hanging.
package lockingtest
