// Package lockbuild builds the lock a config.LockingConfig describes,
// without fx: Build returns the *locking.DistributedLock over memlock,
// redislock (over a client of the caller's or one built from the
// locking.redis keys) or a lock that grants everyone, and Built.Close
// releases what it opened. lockingfx.Module uses it in fx apps; a command
// line or a program without fx calls it directly.
//
// # Providers of other modules
//
// A backend with a driver of its own (PostgreSQL through pgx, say) lives
// in a module of its own, so the library does not require the driver.
// Such a module exports a ProviderFunc, and the program passes it to
// Build under the locking.provider name it serves:
//
//	b, err := lockbuild.Build(cfg.Locking, lockbuild.WithProvider("postgres", pglockfn))
//
// In an fx app, lockingfx.WithProvider does the same through the graph.
// There is no global registry: what a program can build is what it
// passes.
//
// Rule ids (G6, L4, …) are explained in docs/rules.md.
package lockbuild
