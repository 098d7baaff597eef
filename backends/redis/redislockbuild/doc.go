// Package redislockbuild is provider redis as a HostLoom backend, without
// fx: its configuration section locking.redis (Config, decoded and checked
// by config.Load when the backend is given to it), and Backend, the
// lockbuild.Backend that builds the redislock provider over a client built
// from that section or over the app's own.
//
//	backends := []lockbuild.Backend{redislockbuild.Backend{}}
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
