// Package redislockfx plugs the Redis and Valkey provider (package
// redislock) into a HostLoom fx app: with Module next to lockingfx.Module,
// locking.provider: redis and the locking.redis keys are all an app needs.
//
//	fx.New(
//		configfx.Module("app.yaml"),
//		lockingfx.Module,
//		redislockfx.Module,
//		leadershipfx.Role("billing"),
//	)
//
// Module is built on package redislockbuild, which a program without fx
// uses with lockbuild.Build.
//
// # Redis clients
//
// An app that already has a redis.UniversalClient in its graph gets it
// used; otherwise a client is built from locking.redis (standalone,
// Sentinel or Cluster, TLS) and closed when the app stops. A client the
// app supplied is never closed, checked or re-logged here.
//
// For a client it builds, the backend:
//   - routes go-redis's own log to the graph's *zap.Logger at Debug
//     (message RedisClientLog) with redis.SetLogger, which is process-wide.
//     For a client of your own, call
//     redis.SetLogger(redislockbuild.NewRedisLogger(logger)) yourself (O5);
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
// With locking.redis.min_replicas, the start check also warns once
// (HostLoomMinReplicasUnmet) when the server has fewer replicas (Q2).
//
// Rule ids (E7, O4, …) are explained in docs/rules.md.
package redislockfx
