// Package lockbuild builds the lock a config.LockingConfig describes,
// without fx: Build returns the *locking.DistributedLock over memlock, over
// the provider of a backend the program links, or a lock that grants
// everyone, and Built.Close releases what it opened. lockingfx.Module
// uses it in fx apps; a command line or a program without fx calls it
// directly.
//
// # Backends
//
// Every provider other than memory and disabled is a Backend: a value
// from the backend's own package (redislockbuild for Redis and Valkey,
// pglockbuild for PostgreSQL, and others written the same way) that
// names its locking.provider value, decodes and checks its section
// (locking.<name>.*) and builds its provider.
//
// Redis is the library module's own backend and is linked by default:
// config.Load accepts locking.provider: redis and the locking.redis keys
// without being given it, and Build builds it with
// redislockbuild.Backend{}. Other backends plug in: the program lists
// the ones it links and passes the same list to config.Load and Build:
//
//	backends := []lockbuild.Backend{pglockbuild.Backend{}}
//	cfg, err := config.Load("app.yaml", lockbuild.LoadOption(backends...))
//	…
//	b, err := lockbuild.Build(cfg.Locking, lockbuild.WithBackends(backends...))
//
// Passing redislockbuild.Backend (with an app's client or a logger)
// replaces the default; it is not registered twice. There is no global
// registry and no init-time registration: what a program can build is
// redis and what it passes. docs/providers.md shows how to write a
// backend.
//
// # Opening for a command
//
// Open is Build for a short-lived command, such as a verb of the hostloom
// CLI: it picks the backend of locking.provider the same way, lets a
// backend that implements Opener build for one command (a small pool, no
// retries of a refused dial) and asks the server once within a bound.
// A configuration the server refuses is a *config.FieldError; a server
// that does not answer an *UnreachableError naming where and why, never a
// secret. The Session it returns also says where the lock lives (Target),
// how to list the job records (JobKeys) and, where the backend keeps
// them, short-lived notes (Notes). A backend without Opener is opened
// through its Build and start check.
//
// Rule ids (G6, L4, …) are explained in docs/rules.md.
package lockbuild
