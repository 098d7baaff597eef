// Package schedulingfx runs HostLoom's exclusive scheduler in fx
// applications: jobs declared anywhere in the graph, bound to a role, run
// only on that role's leader.
//
//	fx.New(
//		configfx.Module("app.yaml"),
//		lockingfx.Module,
//		leadershipfx.Role("billing"),
//		schedulingfx.Module,
//		schedulingfx.Job("billing", "invoices", "*/5 * * * *", runInvoices),
//		leadershipfx.Module, // last
//	)
//
// # Declaring jobs
//
// Job takes a cron spec and a function; Schedule takes a ready-made
// scheduling.Job (for example on scheduling.Every); JobFunc takes a
// constructor whose parameters fx provides. Each contributes a JobSpec to
// the value group JobsGroup (`group:"hostloom.jobs"`) and asks for the
// schedulers; JobSpec values added to the group by other constructors are
// scheduled too, as long as one of these options is used (without Module,
// one for the same role).
//
// # Job settings
//
// Timeout, Jitter, Overlap (S7), CatchUp (S8) and Recover (S9) set what
// the code decides. The deployment decides under scheduling.jobs.<name>
// (every job of that name, whatever its role): catch_up and overlap
// replace the code's policy; paused, when set, pauses (true) or resumes
// (false) the job through the slot store when its scheduler starts (S10;
// it needs a slot store that keeps job records, else fx.New fails naming
// the key). A scheduling.jobs.<name> key that names no job of the app
// fails fx.New naming the key, its source and the app's jobs. Each
// scheduler records its runs with its role's elector identity
// (scheduling.WithIdentity) and waits one lease of the elector before
// recovering an unfinished slot (scheduling.WithRecoveryHold).
//
// # Schedulers
//
// Each role with jobs gets one scheduling.Scheduler. Module, optional,
// builds them all at once; without it the first job option of a role
// builds that role's scheduler, from every job bound to the role, and
// attaches it to the role's leadershipfx.Handle. Either way: one
// scheduling.Scheduler per role with jobs, over that role's elector (leadershipfx.Role), with the
// config.SchedulingConfig section (time zone, misfire window) and, when
// slot_store is on and the lock coordinates, the lock as slot store so a
// slot starts at most once across replicas. A job bound to a role without
// an elector, a job the scheduler rejects (S6) or a failing job
// constructor fails fx.New with every problem listed, as HostLoom's own
// error rather than inside fx's chain around a failed constructor.
//
// # Start and stop (E11, O2, O3', H3)
//
// Each role's scheduler is built once, from every job bound to the role,
// and attached to the role (leadershipfx.Handle.AttachOnce), with
// schedulingfx.Module or without it: the role's process starts it at the
// role's own hook, just before the role's elector contends, and at
// shutdown stops it, cancelling its runs and waiting for them, before the
// elector releases the lease. A run that ignores its ctx is named in the
// role's Warn log (the job, the role, how long it has run) and its role
// keeps the lease until the run returns or the process exits; the other
// roles release at once. A successor therefore never starts a job while
// this instance's run of it is still going.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package schedulingfx
