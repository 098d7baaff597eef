// Package leadershipfx runs HostLoom elections in fx applications: every
// role of the app belongs to one leadership.Process (one identity, one
// balance group, one leave), and each role starts from a hook of its own,
// in fx's order.
//
//	fx.New(
//		configfx.Module("app.yaml"),
//		lockingfx.Module,
//		fx.Invoke(startHTTPServer),
//		leadershipfx.Module, // optional: *Roles, *Health
//		leadershipfx.Role("billing"),
//		leadershipfx.Role("reports"),
//	)
//
// # Roles
//
// Role(name) provides leadership.Leadership and *leadership.Elector named
// name (inject them with `name:"billing"`) and adds the elector to the
// value group ElectorsGroup (`group:"hostloom.electors"`). Its options come
// from the config.LeadershipConfig section with the role's overrides
// (leadership.roles.<role>), then from WithOptions. The logger, meter and
// tracer providers come from the graph when it has them. The elector is
// built with the app; invalid options or an invalid key fail fx.New with
// the elector's own error, naming the role.
//
// Role also provides the role's *Handle (named name, and in the value
// group RolesGroup), through which leader work is attached to the role.
//
// Module is optional and changes no order: it provides *Roles (the
// roles, their process, Attach and Go by role name) and *Health. The
// shortest form works as well:
//
//	fx.New(
//		configfx.Module("app.yaml"),
//		lockingfx.Module,
//		leadershipfx.Role("billing"),
//		schedulingfx.Job("billing", "invoices", "*/5 * * * *", runInvoices),
//	)
//
// An override leadership.roles.<name> that names no declared role fails
// fx.New with the config's error, naming the key, its source and the
// declared roles (O4), with or without Module.
//
// # Start (F1, O3')
//
// Each Role appends its own OnStart hook where it stands in fx.New. fx
// appends hooks while it runs fx.Invoke functions (and the constructors
// they need), the invokes of nested fx.Module options first, then the
// enclosing ones in the order given, and Start runs the hooks one at a
// time in that order, stopping at the first error and stopping the hooks
// that ran. So roles start as hosted services do, in registration order:
// declared after the app's other options, a role begins contending after
// every hook appended before it; a hook appended after it that fails
// makes fx stop it, and its lease is released before Start returns.
// Nothing decorates fx.Lifecycle: an app may decorate it itself.
//
// A role's OnStart checks its composition: K5 and, strictly, T2 (a lease
// longer than the lock's max_lease fails start with an error naming the
// role and both values, where a container-free elector would be capped).
// It then starts the work attached to the role and the elector, without
// waiting for a first attempt.
//
// # Leader work
//
// Work that must run only while this instance leads, and end before the
// lease is released, is attached to its role (leadership.Process.Attach,
// H3): schedulingfx attaches each role's scheduler, and Roles.Go or
// Handle.Go attaches a reader (a leader channel's reader, or any loop).
// Attached work starts with its role, before the elector contends, and
// stops before its role's elector releases the lease (E11). Work started
// by an fx hook of its own is not coordinated; attach it instead.
//
// # Stop (E11, O2, H2)
//
// fx runs OnStop hooks one at a time in reverse order. The first role's
// OnStop to run makes the app's process leave (leadership.Process.Leave):
// every role at once, as a leaving process does (candidates make no new
// attempt, leaders hand over first, no role moves twice), each role's
// work cancelled and waited for before its lease is released. A role
// whose work has not returned within StopWarnAfter is named in a Warn log
// (LeaderWorkStillRunning: the role, the job or reader, how long it has
// run) and keeps its lease; the other roles are not held up, and the
// hooks between the roles stop. The last role's OnStop to run waits for
// such roles: each releases as soon as its work returns. If the stop ctx
// ends first, it logs LeaseKeptForRunningWork at Error and returns; the
// elector keeps renewing until the work returns or the process exits,
// when the lease expires. A successor therefore never starts while this
// instance's attached work still runs.
//
// # Health
//
// Module provides *Health over every elector: Livez and Readyz are
// http.Handlers. Neither depends on leading: a follower is healthy and
// ready. Readiness is true from the moment every role has started until
// the first one begins to stop.
//
// # Logging
//
// ZapEventLogger sends fx's own event log to the app's *zap.Logger.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package leadershipfx
