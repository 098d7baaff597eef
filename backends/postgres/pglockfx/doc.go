// Package pglockfx plugs the PostgreSQL provider (package pglock) into a
// HostLoom app: with Module next to lockingfx.Module, locking.provider:
// postgres and locking.postgres.dsn are all an app needs.
//
//	fx.New(
//		configfx.Module("app.yaml"),
//		lockingfx.Module,
//		pglockfx.Module,
//		leadershipfx.Role("billing"),
//		leadershipfx.Module,
//	)
//
// It lives in a module of its own with pglockbuild, outside core, so
// HostLoom's library module links no database driver; a program without
// fx uses package pglockbuild, which Module is built on.
//
// # The pool
//
// When the graph has a *pgxpool.Pool, the provider runs over it: the app
// keeps closing it and checking its credentials, and locking.postgres.dsn
// may stay unset. Otherwise a pool is built from the DSN (sized by
// locking.postgres.max_conns) and closed when the app stops. A DSN that
// does not parse fails fx.New with a *config.FieldError naming
// locking.postgres.dsn, its source and what is wrong, never the string
// itself.
//
// # At start
//
// A pool Module built is checked once when the app starts
// (pglockbuild.Check), bounded by the DSN's connect_timeout (10s when it
// sets none). A server that refuses the
// credentials (SQLSTATE class 28) or has no such database (3D000) fails
// start with a *config.FieldError naming locking.postgres.dsn; a table the
// role may not create or read, or whose columns do not match, fails it
// naming locking.postgres.table. Both are logged once at Error. Any other
// failure (the server is down or unreachable) is logged once at Warn
// (HostLoomLockUnreachable, with the cause) and the app starts: the
// electors lead nobody until the server answers, and log the outage
// themselves, once per outage.
package pglockfx
