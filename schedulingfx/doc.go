// Package schedulingfx runs HostLoom's exclusive scheduler in fx
// applications: jobs declared anywhere in the graph, bound to a role, run
// only on that role's leader.
//
//	fx.New(
//		config.Module("app.yaml"),
//		lockingfx.Module,
//		leadershipfx.Role("billing"),
//		schedulingfx.Job("billing", "invoices", "*/5 * * * *", runInvoices),
//	)
//
// # Declaring jobs
//
// Job takes a cron spec and a function; Schedule takes a ready-made
// scheduling.Job (for example on scheduling.Every); JobFunc takes a
// constructor whose parameters fx provides. Each contributes a JobSpec to
// the value group JobsGroup (`group:"hostloom.jobs"`) and makes sure the
// schedulers are built; JobSpec values added to the group by other
// constructors are scheduled too, as long as one of these options is used.
//
// # Schedulers
//
// One scheduling.Scheduler per role with jobs is built over that role's
// elector (leadershipfx.Role), with the config.SchedulingConfig section (time
// zone, misfire window) and, when slot_store is on and the lock
// coordinates, the lock as slot store so a slot starts at most once across
// replicas. The schedulers are built once per app however many options
// contribute jobs. A job bound to a role without an elector, or one the
// scheduler rejects (S6), fails fx.New with every problem listed.
//
// # Stop order (E11)
//
// The schedulers are built after the electors they run on, so their
// lifecycle hooks come later, and fx runs OnStop hooks in reverse: each
// scheduler stops, cancelling its runs and waiting for them, before its
// elector releases the lease. A successor therefore never starts a job
// while this instance's run of it is still going, provided the run honours
// its context.
package schedulingfx
