// Package pglockbuild builds the PostgreSQL provider (package pglock) from
// HostLoom's configuration, without fx: the pool from
// locking.postgres.dsn, the pglock options from the other
// locking.postgres keys, and the start check that tells a configuration
// error from an outage. pglockfx wraps it for fx apps; the hostloom CLI
// and programs that call lockbuild use it directly:
//
//	built, err := lockbuild.Build(cfg.Locking, lockbuild.WithProvider(config.ProviderPostgres, pglockbuild.Build))
//
// A DSN that does not parse is a *config.FieldError naming
// locking.postgres.dsn and its source and what is wrong, never the string
// itself (pgx's own message quotes it, its password masked only on a
// best-effort basis).
package pglockbuild
