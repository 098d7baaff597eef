// Package lockingfx provides HostLoom's lock to fx applications.
//
//	fx.New(
//		fx.Provide(zap.NewProduction),
//		configfx.Module("app.yaml"), // must set locking.provider
//		lockingfx.Module,
//		leadershipfx.Role("billing"),
//	)
//
// # What it provides
//
// Module provides locking.Lock, *locking.DistributedLock and
// locking.Provider, built from the config.LockingConfig section: Redis or
// Valkey for provider redis, the in-process memory provider for provider
// memory, and a lock that grants everyone for provider disabled or enabled
// false.
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
// # Redis clients
//
// With provider redis, an app that already has a redis.UniversalClient in
// its graph gets it used; otherwise New builds one from locking.redis
// (standalone, Sentinel or Cluster, TLS) and closes it when the app stops.
// A client the app supplied is never closed, checked or re-logged here.
//
// For a client it builds, New:
//   - routes go-redis's own log to the graph's *zap.Logger at Debug
//     (message RedisClientLog) with redis.SetLogger, which is process-wide.
//     For a client of your own, call
//     redis.SetLogger(lockingfx.NewRedisLogger(logger)) yourself (O5);
//   - sends one PING at start, waiting at most dial_timeout +
//     read_timeout. A refused authentication (WRONGPASS, NOAUTH) is a
//     configuration error (O4): logged once at Error as
//     HostLoomLockAuthFailed with the user name (never the password), and
//     start fails with a *config.FieldError naming locking.redis.password
//     and its source. Any other failure does not stop the app: it is
//     logged once at Warn as HostLoomLockUnreachable, and electors apply
//     their outage policy (E7: nobody leads, logged once per outage,
//     retried on the candidate cadence) until the server answers.
//
// # Without fx
//
// Build does the same work without fx, contacting no server, and returns a
// Built whose Close releases what it opened.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package lockingfx
