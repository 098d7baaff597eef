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
// # Overlap, failures and panics (S2, S3)
//
// A job never overlaps itself on an instance: a slot that falls due while
// the previous run is going is skipped and counted (reason overlap), not
// queued. A returned error or a panic is logged and counted by outcome;
// the scheduler survives it, and the next slot is not delayed.
//
// # Once per slot (WithSlotStore)
//
// With a slot store (a locking.StateStore: *locking.DistributedLock over
// redislock or memlock), each run first records its slot under
// "sched:{role}:{job}" with Advance, which stores a value only when it is
// greater than the stored one, in one atomic round trip. A run whose slot
// (or a later one) is already recorded does not start (reason started). So
// a slot is started at most once across replicas, whatever their clock
// skew, as long as the store keeps what it acknowledged. A failing store
// skips the slot (reason store_error) rather than risk a second run.
//
// The first claim of each job in a term reads the record first (State), to
// count the slots nobody started since the last recorded one as missed: two
// round trips; later claims take one. Slot times are recorded in
// milliseconds, so with a store Add rejects Every(d) with d below 1ms.
// Jitter delays a run, not its slot: the slot is claimed after the delay.
//
// When an instance starts leading (also when it leads already at Start),
// each job's latest slot within the misfire window (WithMisfireWindow,
// default 1m) that nobody recorded is run once, at once. Older slots nobody
// started, and slots the window held before that latest one, are counted as
// missed and not run.
//
// # What is not guaranteed
//
// Once per slot is as durable as the store. Redis and Valkey acknowledge a
// write before replicas have it: a failover after a slot was recorded but
// before it replicated, or a restart of a server without persistence,
// loses the record, and a new leader may then start that slot again (it
// never starts a slot it can see recorded). If a job must never run twice,
// make it idempotent too. A slot is recorded when its run starts, not when
// it finishes: a run cut short by a leadership loss is not retried by the
// next leader.
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
// with attributes role and job: MetricRuns and MetricRunDuration by
// outcome, MetricSkipped by reason, MetricMissed, and MetricLastSuccess.
// Missed slots of a cron schedule are counted by walking the schedule, at
// most 10,000 slots per count; Every is counted exactly. Each run is a span
// named scheduling.run. Logs are written to the
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
// here and when, and the last outcome and error.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package scheduling
