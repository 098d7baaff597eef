// Package pglockbuild is provider postgres as a HostLoom backend, without
// fx: its configuration section locking.postgres (Config, decoded and
// checked by config.Load when the backend is given to it), and Backend,
// the lockbuild.Backend that builds the PostgreSQL provider (package
// pglock): the pool from locking.postgres.dsn, the pglock options from
// the other locking.postgres keys, and the start check that tells a
// configuration error from an outage. pglockfx wraps it for fx apps; the
// hostloom CLI and programs that call lockbuild use it directly:
//
//	backends := []lockbuild.Backend{pglockbuild.Backend{}}
//	cfg, err := config.Load("app.yaml", lockbuild.LoadOption(backends...))
//	…
//	built, err := lockbuild.Build(cfg.Locking, lockbuild.WithBackends(backends...))
//
// It lives in a module of its own with pglockfx, outside core, so
// HostLoom's library module links no database driver and nothing under
// core imports configuration or fx.
//
// A DSN that does not parse is a *config.FieldError naming
// locking.postgres.dsn and its source and what is wrong, never the string
// itself (pgx's own message quotes it, its password masked only on a
// best-effort basis).
package pglockbuild
