// Package configfx is the fx glue of package config: Module loads the
// configuration (YAML file + HOSTLOOM_* environment) when the app is built
// and provides *config.Config and each of its sections; Supply provides a
// configuration loaded or built by hand.
//
//	fx.New(
//		configfx.Module("app.yaml"), // first: a configuration error is the first one reported
//		lockingfx.Module,
//		leadershipfx.Role("billing"),
//		leadershipfx.Module,
//	)
//
// Module loads as config.Load does, so locking.provider: redis and the
// locking.redis keys load with no backend module (Redis is the library
// module's own backend), and with the backends of the value group
// BackendGroup, which each backend's fx module fills (pglockfx.Module,
// redislockfx.Module, or one of another module, through
// lockingfx.ProvideBackend): their
// locking.provider names are accepted and their sections load. Supply
// takes the configuration as it was loaded.
//
// Package config itself imports no fx, so a program that only loads
// configuration (a command line, a test) links neither fx nor dig.
//
// Rule ids (O4, A3, …) are explained in docs/rules.md.
package configfx
