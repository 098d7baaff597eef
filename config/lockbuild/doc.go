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
// (locking.<name>.*) and builds its provider. The program lists the
// backends it links and passes the same list to config.Load and Build:
//
//	backends := []lockbuild.Backend{redislockbuild.Backend{}, pglockbuild.Backend{}}
//	cfg, err := config.Load("app.yaml", lockbuild.LoadOption(backends...))
//	…
//	b, err := lockbuild.Build(cfg.Locking, lockbuild.WithBackends(backends...))
//
// There is no global registry and no init-time registration: what a
// program can build is what it passes. docs/providers.md shows how to
// write a backend.
//
// Rule ids (G6, L4, …) are explained in docs/rules.md.
package lockbuild
