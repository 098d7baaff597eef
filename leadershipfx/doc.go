// Package leadershipfx runs HostLoom elections in fx applications: one
// elector per role, started after the rest of the app and stopped before
// it, all roles in parallel.
//
//	fx.New(
//		configfx.Module("app.yaml"),
//		lockingfx.Module,
//		leadershipfx.Role("billing"),
//		leadershipfx.Role("reports"),
//		fx.Invoke(startHTTPServer),
//		leadershipfx.Module, // last: *Roles, *Health, and the roles' start
//	)
//
// # Roles
//
// Role(name) provides leadership.Leadership and *leadership.Elector named
// name (inject them with `name:"billing"`) and adds the elector to the
// value group ElectorsGroup (`group:"hostloom.electors"`). Its options come
// from the config.LeadershipConfig section with the role's overrides
// (leadership.roles.<role>), then from WithOptions. The logger, meter and
// tracer providers come from the graph when it has them.
//
// Role also provides the role's *Handle (named name, and in the value
// group RolesGroup), through which leader work is attached to the role.
//
// Module is optional. With it (once per app, as the last option of fx.New
// at the top level) it provides *Roles, which coordinates every role, and
// *Health, and the rules below on start (O3) and stop (O2) hold. Without
// it, the shortest form works as well:
//
//	fx.New(
//		configfx.Module("app.yaml"),
//		lockingfx.Module,
//		leadershipfx.Role("billing"),
//		schedulingfx.Job("billing", "invoices", "*/5 * * * *", runInvoices),
//	)
//
// Each role then has a start and stop hook of its own: its OnStart checks
// the composition (K5, T2), starts the work attached through its Handle
// and then the elector; its OnStop stops that work, waits for it and then
// stops the elector, which releases the lease (F1, E11). With the lock
// from lockingfx.Module, which decorates fx.Lifecycle at the top level,
// these hooks run after every other OnStart hook of the app, wherever the
// roles stand in fx.New (O3: a server started by an invoke after the role
// starts first, and if it fails the role never contends), and at
// shutdown all roles stop together, before any other OnStop hook (O2).
// With a lock supplied some other way, each role's hook is an ordinary
// one: roles start in the order fx builds them, hooks appended later run
// once the election has begun, roles stop one after the other in reverse
// order, and the first role by name logs LeadershipModuleAbsent once at
// Info when the app starts (put Module last for O3 and O2 then).
//
// An override leadership.roles.<name> that names no declared role fails
// fx.New with the config's error, naming the key, its source and the
// declared roles (O4), with or without Module.
//
// # Leader work
//
// Work that must run only while this instance leads, and end before the
// lease is released, is attached to its role: schedulingfx attaches each
// role's scheduler, and Roles.Go or Handle.Go attaches a reader (a leader channel's
// reader, or any loop). Attached work starts just before the electors and
// stops before its role's elector releases the lease (E11). Work started
// by an fx hook of its own is not coordinated: at shutdown the roles stop
// before the hooks registered ahead of Module's, so such work may outlive
// the lease; attach it instead.
//
// # Start with Module (F1, O3)
//
// The elector is built with the app; invalid options or an invalid key
// fail fx.New with the elector's own error, naming the role.
//
// Roles registers two hooks. The first, appended when the first role is
// built (after the lock it runs over), checks every role's composition
// in its OnStart: K5 and, strictly, T2 (a lease longer than the lock's
// max_lease fails start with an error naming the role and both values,
// where a container-free elector would be capped). The second is
// Module's, and its OnStart starts the attached work and then the
// electors, roles in name order, without waiting for a first attempt.
//
// The mechanism behind O3 (electors contend only after every OnStart hook
// of the app succeeded) is the order fx gives hooks. fx v1.24 has no
// "started" signal (uber-go/fx issue 1245). It appends hooks while it runs
// fx.Invoke functions (and the constructors they need), the invokes of
// nested fx.Module options first, then the top-level ones in the order
// given; Start runs OnStart hooks one at a time in that order, over the
// hooks appended before it began, and stops at the first error, rolling
// back the hooks that ran. Module's invoke appends its hook, so when Module
// is the last top-level option its hook is the last one: it runs only
// after every other OnStart hook returned nil, and never when one failed.
//
// The limits: it holds only with Module last at the top level. A hook
// appended by an option after Module, or by an invoke inside an fx.Module
// that encloses Module, runs after the electors started; fx cannot tell,
// but a role built or work attached after Module's hook fails fx.New
// saying to put Module last. Hooks appended while the app starts are not
// run by fx at all. A start deadline that passes before Module's hook
// keeps fx from running it, so the electors do not start.
//
// # Stop with Module (E11, O2)
//
// fx runs OnStop hooks one at a time in reverse order and, once the stop
// ctx has ended, runs no more; so Roles stops every role from Module's
// OnStop, the first to run, in parallel: each role cancels its attached
// work, waits for it, then stops its elector, which cancels the Token and
// releases the lease so another replica takes over at once. A role whose
// work has not returned within StopWarnAfter is named in a Warn log
// (LeaderWorkStillRunning: the role, the job or reader, how long it has
// run) and keeps its lease; the other roles are not held up, and the rest
// of the app stops. The first hook's OnStop, which runs after the hooks
// registered since, and before the lock's, waits for such roles: each
// releases as soon as its work returns. If the stop ctx ends first, it
// logs LeaseKeptForRunningWork at Error and returns; fx then stops
// nothing more, so the lock's client stays open and the elector keeps
// renewing until the work returns or the process exits, when the lease
// expires. A successor therefore never starts while this instance's
// attached work still runs.
//
// # Health
//
// Module provides *Health over every elector: Livez and Readyz are
// http.Handlers. Neither depends on leading: a follower is healthy and
// ready. Readiness is true from the moment the roles have started (after
// every other OnStart hook) until they begin to stop, the first thing at
// shutdown.
//
// # Logging
//
// ZapEventLogger sends fx's own event log to the app's *zap.Logger.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package leadershipfx
