// Package leadership elects one leader per role among the replicas of a
// service, over a lease-based locking.Lock, and gates leader-only work on
// that election.
//
// An Elector is the lease-based election Kubernetes controllers and most
// cloud services use: a candidate tries to take the lease "leader:{role}"
// (by default), the leader renews it on its own cadence, and a renewal the
// backend refuses or a lease that runs out steps the instance back to
// candidate at once. Consumers depend on the small Leadership interface;
// *Elector implements it and adds Start, Stop, Resign, Run, Fence, Leader,
// OnNewLeader, Participants and Check. Every type has a public
// constructor, so an elector composes without a container:
//
//	lock, _ := locking.New(redislock.New(client), locking.DefaultOptions())
//	e, err := leadership.NewElector("billing", lock, leadership.DefaultOptions())
//	...
//	go e.Run(ctx) // Start, lead while ctx lives, release when it ends
//	for e.WaitForLeadership(ctx) == nil {
//		runLeaderLoop(e.Token()) // ends when leadership does
//	}
//
// # One owner
//
// Each Elector has one state machine that alone reads and writes its term:
// the lease, the deadlines, the call under way. Lock calls run on
// short-lived goroutines and post their outcome to it; Stop and Resign post
// requests carrying their reply channel; a timer posts when a renewal or an
// attempt falls due; the lock's notifications are posted too. A goroutine
// started when the first message arrives handles the messages one at a time
// and ends when there are none, so an idle elector costs no goroutine (10,000
// electors over one Redis take about 41 MB). Readers (IsLeader, Term, Token,
// Fence, Describe, Check) read the snapshot the machine publishes through one
// atomic pointer.
//
// # Keys
//
// Options.LockKeyFormat names the lock key; it must contain the
// case-sensitive placeholder {role}, and every occurrence is replaced. All
// other characters are literal, braces included: "{elections}:{role}"
// resolves to "{elections}:scheduler". Options.LockKey, when set, is used
// literally instead, without placeholder expansion. With namespace billing,
// role scheduler and format "election:eu:{role}", the provider key is
// "billing:lock:election:eu:scheduler". Consumer braces do not select the
// Redis Cluster slot: cluster mode requires locking.Options.UseHashTags,
// which wraps the namespace first ("{billing}:lock:{elections}:scheduler"),
// and Redis hashes only the first {...}, so the slot stays on the
// namespace. Resolved keys are nonempty and have no whitespace or control
// characters; NewElector checks their length against the lock's
// MaxKeyLength (512 bytes by default) before starting. A custom Lock
// without locking.Limits remains responsible for its own length limit.
//
// Elector.LockKey and Describe(e).LockKey report the consumer key captured
// at construction, before namespacing: changing the Options value later
// re-keys nothing, also across retries and resignation. Validate checks
// syntax and timing, ValidateFor also the expanded key length, and
// ResolveLockKey resolves and validates the key without an election.
//
// Replicas must agree on the namespace and the resolved key; independent
// roles sharing a namespace need distinct keys. Changing either creates a
// separate election: stop all old replicas and let their leases expire
// before starting the new identity, including on rollback.
//
// # The guarantee
//
// Effects that pass through a fence check never overlap: every lease from
// redislock and memlock carries a fence (locking.Fenced), strictly
// increasing per key across holders, Redis restarts and failovers as long
// as server clocks do not step back (G1). The term's fence is Fence,
// Change.Fence, Describe and FenceFrom for Token and every context derived
// from it (G2); a store that refuses lower fences (package core/fencing)
// refuses a deposed leader's late writes (G5).
//
// Other effects get the lease tier: at most one leader while clocks and
// the lock backend behave. The local term ends at sent + granted −
// SafetyMargin (G4; the request's send time on the monotonic clock, the
// lease the backend granted, and a margin of Lease/100 + 2ms by default), so
// it ends before the backend's lease even with a little clock drift. The
// machine cancels Token at that deadline, also while a lock call hangs, and
// IsLeader, Token().Err() and Assert compare the clock with the deadline
// themselves when called (G3): a process resumed after a pause sees "not
// leader" on its first check. A renewal that succeeds after the deadline
// does not revive the term. What remains: work already past its check when
// the term ends, a suspended virtual machine (the monotonic clock stops
// while it is suspended), and asynchronous replication losing an
// acquisition on failover. Only a fence checked where the effect lands
// covers those. This is the same tier as the Kubernetes Lease election and
// is not consensus.
//
// Every call has a bounded context: an acquisition at most
// min(RetryInterval, Lease), a renewal attempt at most half the remaining
// lease, so a hanging attempt leaves time for another.
//
// # Who leads (P1, P2)
//
// Every running elector registers as a participant of its role through the
// requests it already makes; Participants lists them in one round trip and
// Stop deregisters. Every instance learns the leader's identity without
// extra I/O, from refused acquisitions and from acquisition
// notifications: Leader answers from that, OnNewLeader reports each change,
// and LookupLeader asks the backend.
//
// # Renewal
//
// The elector owns renewal instead of the lock's automatic extension, which
// stops at locking.Options.MaxHold: a leader renews every RenewInterval for
// as long as it lives. A renewal the backend refuses (locking.ErrLeaseLost)
// or a deadline that passes ends the term at once. A renewal that fails at
// the provider while the lease still runs keeps leadership and the term:
// the leader retries at the renewal cadence or at half the remaining lease
// when that is sooner, never closer than RenewRetryFloor and never at or
// past the deadline, until an extension succeeds or the lease ends.
//
// Keep Options.Lease within the lock's MaxLease: the fx composition fails
// at start naming the role and both values (CheckLease), while a
// container-free elector is capped by the lock. Keep RenewInterval at most
// half the lease. Every cadence is validated against MaxWait, the longest
// wait the loop schedules.
//
// # Handover
//
// Stop cancels Token first and releases the lease last, so a graceful
// restart hands over at once; Resign releases and sits out one
// RetryInterval so another instance gets the first chance. A crashed
// process hands over when its lease expires. A candidate wakes at once on
// a release notification when the lock offers one, and just after the
// holder's remaining lease (learned from a refused acquisition) runs out.
// While its notification subscription is live (locking.EventSubscribed),
// that is all it does: it sleeps until the learned expiry instead of
// polling (P3); when the lock announces renewals (locking.EventExtended,
// as pglock does) it sleeps on to the extended lease's end, trying only
// once per 3/2 of a Lease to keep its participant registration (P1).
// Without a subscription, or while it is down, it tries on
// the RetryInterval cadence exactly (no jitter), but makes no attempt
// until the subscription is back (or a lease has passed since it dropped);
// when it comes back it keeps that cadence, no sooner than a head start
// (a release published meanwhile is found by the next attempt), so that
// the leader gets the first chance to verify (below). When the subscription first comes up after this candidate was
// already refused, it tries once at once. An operator's resign request
// (locking.EventResign, the hostloom CLI's resign) makes the leader step
// down as Resign does. HandOver (and the CLI's handover) names the
// participant that takes the role at once; the others wait one
// RetryInterval (H4). OnChange(false) reaches its subscribers before the
// lease is released.
//
// # A process (H1, H2, H3)
//
// A process that runs many roles builds one Process (NewProcess) and its
// electors with Process.Elector: one identity, one balance group. Leader
// work attached to a role with Process.Attach starts with the role and is
// stopped, and waited for, before the role's lease is released; GoWork
// makes such work of a loop that runs until its context ends.
// Process.Leave stops every role as below. leadershipfx builds one
// Process per fx app.
//
// A process that runs many roles stops them with Process.Leave (or, for
// electors without a process, StopAll): its electors
// stop trying and renewing, its candidates withdraw from their roles'
// participants, then the electors that lead
// stop and release, then the others, so the roles it led are taken over
// before the rest of its stop work is done (B1).
//
// # A server that lost its data (Q1)
//
// A lock server restarted without persistence (or failed over to a replica
// that missed writes) forgets the leader's lease while the leader still
// believes in it. The leader learns of it as soon as it can: when its
// subscription comes back after dropping (locking.EventSubscribed after
// locking.EventUnsubscribed), it renews at once instead of at its cadence,
// and a refusal ends the term; when another acquisition of its role is
// announced (locking.EventAcquired with a fence larger than its own, or by
// another owner when the lock sends no fences), it ends its term at that
// moment, like a refused renewal (Token cancelled, a Change with reason
// Refused), and contends again. A candidate whose subscription dropped
// does not acquire until it is back, and then no sooner than a head start
// of 50ms (at most half its RetryInterval), so the leader learns first; a
// lease after the drop it tries regardless. A leader that cannot reach the server is
// told nothing: its own deadline ends the term. redislock's
// Options.Quarantine closes that window, at the cost of one lease without
// a leader after each loss.
//
// # Uncoordinated locks and faults
//
// Over a lock that does not coordinate (locking.Options.Disabled) the
// lease is a placeholder every instance is granted, so the elector follows
// Options.WhenUncoordinated: Follow, the default, never leads, so replicas
// cannot all lead by accident; Lead leads without coordination, for a
// single instance or local development. The condition is logged once per
// role and reported by IsCoordinated and Describe.
//
// An unreachable provider makes nobody leader; it is logged once per
// outage at Warn (and once at Info on recovery) and retried on the
// candidate cadence. An acquisition or renewal too few replicas
// acknowledged (locking.ErrNotAcknowledged; Redis with
// locking.redis.min_replicas, Q2) is not an outage: no term begins, or
// the term keeps its earlier end; the episode is logged once at Warn as
// LeadershipReplicasNotAcknowledged (and once at Info as
// LeadershipReplicasAcknowledged when a call counts again), and each such
// call is counted in MetricUnacknowledged. An error or panic the loop did
// not expect (including
// a panic from the Lock) is logged as LeadershipLoopFaulted, backed off one
// RetryInterval, and survived: the loop never ends on its own.
//
// # Notifications
//
// OnChange subscribers are called in transition order, one at a time, on a
// delivery goroutine of the elector, never while it holds its lock.
// Changes queue for a slow subscriber (one per transition) while the
// election goes on; a subscriber's panic is logged and survived. Stop
// waits for queued notifications, bounded by its context.
//
// # Health and probes
//
// Check (and CheckWithin) report an error when the elector's loop made no
// progress for well over the wait it scheduled, or when the instance
// believes it leads past its local lease deadline; use it behind liveness
// and readiness endpoints. Describe reports the composition without I/O;
// LookupLeader asks the lock who holds the role (identity and remaining lease),
// when the lock supports holder lookup.
//
// # Leader channel
//
// Channel[T] is a bounded channel gated on a Leadership: producers on every
// instance write to it, a leader's items reach the reader, and a
// follower's are accepted and discarded, which keeps a warm standby's
// producers running without letting it act (C1). Drops are counted by
// reason (follower, full, loss) and summarised in the log at most once per
// DropReportInterval (C2, C3). With FullMode Wait, losing leadership wakes
// blocked producers, and a write that waited rechecks the role (C4, C5).
// Accepted items stay readable after loss unless DrainOnLoss discards them
// (C6): channel admission is not a fencing guarantee, so wrap leader-only
// side effects in Token. The channel starts no goroutine.
//
// # Telemetry
//
// Logs go to the zap logger of WithLogger: transitions at Info, retries at
// Debug, loss at Warn. Metrics and spans use the meter and tracer providers
// of WithMeterProvider and WithTracerProvider under the instrumentation
// scope "github.com/hostloom/hostloom/core/leadership": MetricIsLeader and
// MetricFence per role and identity, MetricTransitions by reason,
// MetricRenewals and MetricRenewalDuration by outcome,
// MetricAcquireAttempts by outcome, MetricHandoverDuration by kind,
// MetricParticipants, MetricChannelDropped by channel and reason, and one
// client span per lock call (SpanAcquire, SpanRenew, SpanRelease,
// SpanWatch, SpanUnwatch, SpanDeregister). Every instrument has a UCUM
// unit and every attribute key the hostloom. prefix (AttrRole, AttrIdentity,
// AttrOutcome, …); docs/telemetry.md lists them with their cardinality. A
// meter that refuses an instrument fails NewElector or NewChannel.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package leadership
