// Package leadershipfx runs HostLoom elections in fx applications: one
// elector per role, started and stopped with the app.
//
//	fx.New(
//		config.Module("app.yaml"),
//		lockingfx.Module,
//		leadershipfx.Role("billing"),
//		leadershipfx.Role("reports"),
//		leadershipfx.Module, // *Health for /healthz and /readyz
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
// # Lifecycle (F1, E11)
//
// The elector is built with the app; invalid options or an invalid key fail
// fx.New, naming the role. OnStart checks the composition once more (K5 and,
// strictly, T2: a lease longer than the lock's max_lease fails start with
// an error naming the role and both values, where a container-free elector
// would be capped) and starts the election without waiting for its first
// attempt. OnStop calls Stop, which cancels the leadership Token and
// releases the lease so another replica takes over at once.
//
// fx runs OnStop hooks in the reverse order of OnStart. Everything built
// from a role's Leadership (a scheduler, a channel's reader) registers its
// hooks after the elector's, so it stops before the elector releases the
// lease: a successor never starts while this instance's leader work runs.
//
// # Health
//
// Module provides *Health over every elector: Livez and Readyz are
// http.Handlers. Neither depends on leading: a follower is healthy and
// ready. Readiness is false until the app has started and from the moment
// it stops.
//
// # Logging
//
// ZapEventLogger sends fx's own event log to the app's *zap.Logger.
package leadershipfx
