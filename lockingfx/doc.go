// Package lockingfx provides HostLoom's lock to fx applications.
//
//	fx.New(
//		fx.Provide(zap.NewProduction),
//		configfx.Module("app.yaml"), // must set locking.provider
//		lockingfx.Module, // redis, memory or disabled; other backends plug in
//		leadershipfx.Role("billing"),
//	)
//
// # What it provides
//
// Module provides locking.Lock, *locking.DistributedLock and
// locking.Provider, built from the config.LockingConfig section: the
// in-process memory provider for provider memory, a lock that grants
// everyone for provider disabled, and for any other name
// the provider of the backend the app links under that name.
//
// # Backends
//
// Redis and Valkey are the library module's own backend, linked by
// default: with no backend named redis in the graph, New builds provider
// redis with redislockbuild.Backend over the graph's redis.UniversalClient
// (LockParams.Client) if any, else a client from locking.redis, logging
// to the graph's *zap.Logger. redislockfx.Module does the same, and takes
// its place when added (the backend is then provided once).
//
// Every other backend plugs in. Its fx module (pglockfx for PostgreSQL,
// or one of another module) puts its lockbuild.Backend in the graph with
// ProvideBackend, in the two
// value groups BackendGroup and configfx.BackendGroup: configfx.Module then
// accepts its locking.provider name and loads its section
// (locking.<name>.*), and New builds its provider. Backend does the same
// for a backend that needs nothing from the graph. A provider name no
// linked backend serves fails fx.New naming the key, its source and the
// names linked. docs/providers.md shows how to write a backend.
//
// # Fail closed
//
// There is no default provider (G6): without a config.LockingConfig in the
// graph, or with one that names no locking.provider, New fails naming the
// key and the choices, so a replica whose configuration went missing never
// runs on a lock of its own. The memory provider is used only when chosen;
// New then logs HostLoomLockMemory once at Warn: it coordinates the
// electors of this process only.
//
// # At start
//
// A backend may check its server once when the app starts
// (lockbuild.Provided.Check: the Redis and PostgreSQL backends do for a
// client or pool they built). A configuration the server refuses
// (credentials, say) fails start with a *config.FieldError naming the key;
// any other failure is an outage the electors ride out (E7), and the app
// starts.
//
// # Without fx
//
// lockbuild.Build does the same work without fx, contacting no server,
// and returns a Built whose Close releases what it opened.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package lockingfx
