// Package scheduling is HostLoom's exclusive scheduler: jobs that run on a
// schedule, only on the instance that leads a role, at most once per slot
// across failover when a slot store is configured.
//
//	s, err := scheduling.New(elector, scheduling.WithSlotStore(lock))
//	every, _ := scheduling.Cron("*/5 * * * *")
//	err = s.Add(scheduling.Job{Name: "invoices", Schedule: every, Run: runInvoices, Timeout: time.Minute})
//	err = s.Start(ctx)
//	defer s.Stop(ctx)
//
// # Schedules
//
// Every(d) falls due at the multiples of d (exact, never rounded), aligned
// on time.Time's zero instant, so Every(time.Minute) falls due at whole UTC
// minutes on every replica. Cron parses standard five-field expressions
// (minute first), an optional leading seconds field, descriptors (@hourly,
// @daily, "@every 5m") and a CRON_TZ= or TZ= time zone prefix. Expressions
// are parsed by github.com/robfig/cron/v3, the parser Kubernetes CronJob and
// gocron v2 use, so an expression means here what it means there. Cron
// expressions without a zone use WithLocation, UTC by default (not
// time.Local: replicas set to different zones would otherwise disagree on
// slots). Daylight-saving rules are documented on Cron.
//
// A slot is a scheduled time. Each replica computes the same slots, and a
// slot is identified by its Unix time in milliseconds in the slot store.
//
// # Leadership (S1)
//
// A job runs only while the scheduler's leadership.Leadership leads. Each
// run's ctx derives from the Token of the term in which the run started, so
// it ends when that term ends, when the scheduler stops, or at the job's
// Timeout, whichever comes first. A job must honour its ctx: the scheduler
// cannot stop a goroutine that ignores it, and a new leader may start while
// an old run that ignores its ctx still runs. Leadership already held at
// Start counts; the scheduler resumes on every later term.
//
// The scheduler owns one goroutine and one timer, whatever the number of
// jobs: the loop sleeps until the earliest slot, a leadership change
// (OnChange) or an Add. A run is one goroutine for its duration. Slots
// keep falling due while the instance follows; they are counted as skipped
// (reason follower) and not run.
//
// # Overlap, failures and panics (S2, S3, S7)
//
// A job never overlaps itself on an instance. What happens to a slot that
// falls due while the previous run is going is the job's Overlap policy:
// OverlapSkip (the default) skips it, counted (reason overlap), not
// queued; OverlapBufferOne runs once more right after the current run
// ends, for the latest slot that fell due meanwhile (a buffered slot a
// later one supersedes is skipped, reason overlap); OverlapCancelPrevious
// cancels the running run's ctx (its outcome is Canceled), waits for it to
// return, then starts the new slot. Each such slot is counted by what the
// policy did (MetricOverlap: skip, buffer, cancel). Catch-up and recovery
// runs count as the running run. A returned error or a panic is logged
// and counted by outcome; the scheduler survives it, and the next slot is
// not delayed.
//
// # Once per slot (WithSlotStore)
//
// With a slot store, each run first claims its slot under the job's key
// JobKey(role, job) = "sched:{role}:{job}": the claim stores the slot only
// when it is greater than every slot recorded, in one atomic step. A
// run whose slot (or a later one) is already recorded does not start
// (reason started). So a slot is started at most once across replicas,
// whatever their clock skew, as long as the store keeps what it
// acknowledged. A failing store skips the slot (reason store_error) rather
// than risk a second run. Slot times are recorded in milliseconds, so with
// a store Add rejects Every(d) with d below 1ms. Jitter delays a run, not
// its slot: the slot is claimed after the delay.
//
// There are two kinds of store. A slotstore.Jobs (a *locking.DistributedLock
// whose provider has job slots: Capabilities().JobSlots, as memlock,
// redislock, pglock and etcdlock do; a lock without them is no store at
// all) keeps the job's records: latest slot, the unfinished attempt,
// paused state and history, in one key per job
// ({namespace}:jobs:sched:{role}:{job}, a hash on Redis, so one job's
// records live in one Cluster slot), decided by package core/jobrecord. A
// run then takes a claim (which also reads the paused state, the previous
// slot for the missed count, and for a Recover job the unfinished attempt)
// and a completion, each a read and a conditional write: four round trips
// over Redis, three when the claim writes nothing. Any other slotstore.State gets the
// claim-only path: Advance under {namespace}:state:sched:{role}:{job}, one
// round trip per run plus one read (State) at a term's first claim;
// recovery, pause and history need a slotstore.Jobs.
//
// Job records expire: every write sets their time to live to the longest
// of SlotStateTTL (7 days), three intervals of the job's schedule and
// twice the misfire window. Keys of the claim-only path do not expire.
//
// # Catch-up (S8)
//
// When an instance starts leading (also when it leads already at Start),
// the job's CatchUp policy decides which slots within the misfire window
// (WithMisfireWindow, default 1m) that nobody recorded it runs, at once:
// CatchUpLatest (the default) the latest one; CatchUpAll every one, oldest
// first, one at a time (at most MaxCatchUp); CatchUpNone none. Slots nobody
// started that are not run are counted as missed (MetricMissed) and
// logged at Info with their count (SchedulerSlotsMissed), whatever the
// policy.
//
// # Recovery (S9)
//
// A slot is recorded when its run starts. Without Recover that is all: a
// run cut short by a failover is not run again (at most once per slot).
// With Job.Recover (which needs a JobStore) the store also records each
// run's end, in the same atomic step as the completion: the slot is done
// unless the run returned Canceled because its term ended or the
// scheduler stopped. A slot that is not done — its run was cut short, or
// its process died and never reported — is run once more by the next
// claim of another term (the next leader's first claim: at once when it
// starts leading), with AttemptFrom(ctx) = 2, then 3; after
// slotstore.MaxJobAttempts (3) attempts it is given up. Slots that fell due
// meanwhile run after the recovery when still within the misfire window.
//
// The rule for "the earlier attempt's term has certainly ended": the claim
// records, on the store's clock (Redis TIME), until = the time the claim
// read the job's record (a round trip before it wrote it) + the recovery
// hold (WithRecoveryHold, default the elector's lease). A
// recovery runs only when the earlier attempt reported its end (it
// returned), or once the store's clock has passed until. A leader's lease
// cannot outlive its last renewal by more than a lease, and a successor
// only leads once the predecessor's lease ended, so in the usual case the
// hold has already passed when the successor asks. The hold matters when
// the lock's record was lost (a failover to a replica that missed the
// latest renewal) while the job records survived: it keeps the successor
// from recovering a slot claimed within the last lease; an older attempt
// whose leader kept renewing is told apart only by its fence, where the
// effect's store checks fences. Which replica recovers is decided by the store: the
// recovery claim names the attempt it supersedes, so two leaders never
// both recover one attempt. A run must still honour its ctx: a process
// that ignores it, or is paused past its lease, can still be running when
// the recovery starts (see package leadership on fencing).
//
// # Pause and resume (S10)
//
// Pause and Resume write the paused state into the job's records; every
// claim reads it in the same atomic step, so the leader skips the next slot
// after a Pause on any replica (reason paused, logged at Debug), without
// polling. A paused slot is recorded as passed, so it is never caught up,
// neither after Resume nor by a new leader. JobInfo.Paused reports the
// state this instance last saw.
//
// # History (S11)
//
// With a JobStore, each claim writes the run's record (slot, start,
// identity, fence, attempt) and the completion rewrites it with the end
// and outcome. The store keeps the newest slotstore.JobHistoryLen (100)
// records per job, expiring with the job's records; History reads them,
// newest first. ReadHistory reads them without a Scheduler (for tools).
// Fence is 0 until the scheduler is given the term's fence.
//
// # What is not guaranteed
//
// Once per slot is as durable as the store. Redis and Valkey acknowledge a
// write before replicas have it: a failover after a slot was recorded but
// before it replicated, or a restart of a server without persistence,
// loses the record, and a new leader may then start that slot again (it
// never starts a slot it can see recorded). If a job must never run twice,
// make it idempotent too. Without Recover a slot is recorded when its run
// starts, not when it finishes: a run cut short by a leadership loss is
// not retried by the next leader. With Recover a slot may run more than
// once (at least once, at most slotstore.MaxJobAttempts times).
//
// Without a slot store, S1–S6 still hold on each instance, but a new leader
// does not know which slots its predecessor started: slots that fell due
// while this instance was not leading are not replayed, and nothing stops
// two replicas from running the same slot when their leaderships overlap
// (a lease that expired while its holder was paused; see package
// leadership: there is no fencing).
//
// # Telemetry (S4)
//
// Under the instrumentation scope github.com/hostloom/hostloom/core/scheduling,
// with the attributes AttrRole and AttrJob: MetricRuns and MetricRunDuration by
// outcome, MetricSkipped by reason, MetricOverlap by action, MetricMissed,
// MetricLag (start − slot) and MetricLastSuccess.
// Missed slots of a cron schedule are counted by walking the schedule, at
// most 10,000 slots per count; Every is counted exactly. Each run is a span
// named SpanRun (hostloom.scheduling.run). Every instrument has a UCUM unit
// and every attribute key the hostloom. prefix; docs/telemetry.md lists
// them. A meter that refuses an instrument fails New. Logs are written to the
// WithLogger logger: failures at Error, leadership loss at Warn.
//
// # Stopping (S5)
//
// Stop cancels every run's ctx and waits for the runs to return, bounded by
// its own ctx. In an fx application stop the scheduler before its elector,
// so the elector releases the lease only after the jobs returned (E11).
//
// # Introspection
//
// Jobs reports, per job, the next slot, whether it runs, the last slot run
// here and when, the last outcome and error, and the paused state. A run's
// ctx tells the job its slot (SlotFrom) and attempt (AttemptFrom).
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package scheduling
