// Package lockingfx provides HostLoom's lock to fx applications.
//
//	fx.New(
//		config.Module("app.yaml"),
//		lockingfx.Module,
//		leadershipfx.Role("billing"),
//	)
//
// # What it provides
//
// Module provides locking.Lock, *locking.DistributedLock and
// locking.Provider, built from the config.Locking section (the defaults
// when the app provides none): the in-process memory provider by default,
// Redis or Valkey for provider redis, and a lock that grants everyone for
// provider disabled or enabled false.
//
// # Redis clients
//
// With provider redis, an app that already has a redis.UniversalClient in
// its graph gets it used; otherwise New builds one from locking.redis
// (standalone, Sentinel or Cluster, TLS) and closes it when the app stops.
// A client the app supplied is never closed here. Nothing contacts Redis
// at start, so an unreachable server does not stop the app: electors find
// out on their first attempt and apply their outage policy (E7: nobody
// leads, logged once per outage, retried on the candidate cadence).
//
// # Without fx
//
// Build does the same work without fx and returns a Built whose Close
// releases what it opened.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package lockingfx
