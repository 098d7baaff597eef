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
// last checks need optional capabilities (locking.Subscriber,
// ResignRequester, ParticipantRegistry, Inspector, job records: a
// RecordStore with jobrecord.State, or a jobrecord.Jobs); a check whose capability the lock lacks is skipped, and
// L9_CapabilitiesReported checks that the lock reports ErrNotSupported
// for it instead.
//
// # Provider contract (L9)
//
// A Backend that also implements ProviderBackend (NewProvider) is checked
// again over its provider restricted to the required methods (L9_Minimal)
// and to each optional capability alone (L9_EventsOnly,
// L9_EventsAndResign, L9_ParticipantsOnly, L9_InspectOnly,
// L9_JobSlotsOnly). Each run also checks an elector over the lock: it takes
// over at once after the leader's graceful Stop when the lock has events
// and by its next attempt when it has none, Stop and Run return nil after a
// clean release, an operator's resign is answered ErrNotSupported without
// the capability (and makes the leader step down with it), and a Stop
// whose deregistration fails during an outage returns nil.
//
// # Job store (S9–S11)
//
// RunJobStore checks a lock's job records: claims, recovery after a hold
// or a returned run, completion (a superseded claim's included), pause,
// bounded attempts and bounded history. Its steps share one key, in
// order; memlock, redislock, pglock and etcdlock run it over a lock of
// their own. RunJobClaimRace checks that concurrent claims of one slot
// are granted once, which a store that writes back only if unchanged
// must get right when a write loses.
//
// # Time
//
// With Config.Synctest every check runs in a testing/synctest bubble: the
// expiry checks then take no real time. Network backends run on real time
// with short leases (Config.Short, 50ms by default); no check asserts on how
// fast anything is, only on what happens, with generous timeouts that fail
// a broken backend instead of hanging.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package lockingtest
