// Package leadership elects one leader per role among the replicas of a
// service, over a lease-based locking.Lock, and gates leader-only work on
// that election.
//
// An Elector is the lease-based election Kubernetes controllers and most
// cloud services use: a candidate tries to take the lease "leader:{role}"
// (by default), the leader renews it on its own cadence, and a renewal the
// backend refuses or a lease that runs out steps the instance back to
// candidate at once. Consumers depend on the small Leadership interface;
// *Elector implements it and adds Start, Stop, Resign, LockKey, Leader and
// Check. Every type has a public constructor, so an elector composes
// without a container:
//
//	lock, _ := locking.New(redislock.New(client), locking.DefaultOptions())
//	e, err := leadership.NewElector("billing", lock, leadership.DefaultOptions())
//	...
//	_ = e.Start(ctx)
//	defer e.Stop(context.Background())
//	if err := e.WaitForLeadership(ctx); err == nil {
//		runLeaderLoop(e.Token()) // ends when leadership does
//	}
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
// At most one leader per role while clocks and the lock backend behave. On
// lease expiry there is a window, bounded by Options.Lease plus clock skew,
// in which the previous leader may still believe it leads; Token bounds
// what it does with that belief only if the work honours the token. There
// is no fencing: Term counts this instance's acquisitions and is not a
// token a storage layer can check. Asynchronous replication in Redis and
// Valkey can lose an acquisition on failover, as it can for any lease.
// This is the same tier as the Kubernetes Lease election and is not
// consensus.
//
// The local lease deadline counts from when the acquire or extend request
// was sent, on the monotonic clock, so it never ends later than the
// backend's expiry; Token is cancelled no later than that deadline, also
// while a lock call hangs (a timer fires at the deadline, and every call
// has a bounded context: an acquisition at most min(RetryInterval, Lease),
// a renewal attempt at most half the remaining lease, so a hanging attempt
// leaves time for another).
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
// process hands over when its lease expires. Candidates try on the
// RetryInterval cadence exactly (no jitter), but wake sooner: at once on a
// release notification when the lock offers one (locking.Watcher), and
// when a refused acquisition reports the holder's remaining lease, just
// after that lease runs out. Notifications are best effort: a lost one
// costs at most one RetryInterval.
//
// # Uncoordinated locks and faults
//
// Over a lock that does not coordinate (locking.Options.Enabled false) the
// lease is a placeholder every instance is granted, so the elector follows
// Options.WhenUncoordinated: Follow, the default, never leads, so replicas
// cannot all lead by accident; Lead leads without coordination, for a
// single instance or local development. The condition is logged once per
// role and reported by IsCoordinated and Describe.
//
// An unreachable provider makes nobody leader; it is logged once per
// outage at Warn (and once at Info on recovery) and retried on the
// candidate cadence. An error or panic the loop did not expect (including
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
// Leader asks the lock who holds the role (identity and remaining lease),
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
// scope "github.com/hostloom/hostloom/core/leadership": MetricIsLeader per
// role, MetricTransitions by reason, MetricRenewals by outcome,
// MetricRenewalDuration, MetricAcquireAttempts by outcome, and the spans
// SpanAcquire, SpanRenew and SpanRelease.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package leadership
