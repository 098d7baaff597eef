// Package redislockbuild is provider redis as a HostLoom backend, without
// fx: its configuration section locking.redis (Config, an alias of
// config.RedisConfig) and Backend, the lockbuild.Backend that builds the
// redislock provider over a client built from that section or over the
// app's own.
//
// Redis is the library module's own backend and is linked by default:
// config.Load decodes and checks locking.redis with no option, and
// lockbuild.Build builds Backend{} when it is given no backend named
// redis. Pass a Backend to both only to give it a client or a logger; it
// then takes the default's place:
//
//	backends := []lockbuild.Backend{redislockbuild.Backend{Client: client, Logger: log}}
//	cfg, err := config.Load("app.yaml", lockbuild.LoadOption(backends...))
//	…
//	b, err := lockbuild.Build(cfg.Locking, lockbuild.WithBackends(backends...))
//
// redislockfx wraps it for fx apps. The keys are those of
// docs/configuration.md (locking.redis.*); Password and SentinelPassword
// are config.Secret values that no String, log line or error shows.
//
// Rule ids (Q2, Q3, …) are explained in docs/rules.md.
package redislockbuild
