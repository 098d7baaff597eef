package config

import "go.uber.org/fx"

// Sections is what Module provides: the whole Config and each section, so
// a module can depend on the section it reads.
type Sections struct {
	fx.Out

	Config        *Config
	Locking       LockingConfig
	Leadership    LeadershipConfig
	LeaderChannel LeaderChannelConfig
	Scheduling    SchedulingConfig
}

// Provide returns c and its sections as Sections.
func Provide(c *Config) Sections {
	return Sections{
		Config:        c,
		Locking:       c.Locking,
		Leadership:    c.Leadership,
		LeaderChannel: c.LeaderChannel,
		Scheduling:    c.Scheduling,
	}
}

// Module loads the configuration with Load(path, opts...) and provides
// *Config and its sections (LockingConfig, LeadershipConfig,
// LeaderChannelConfig, SchedulingConfig). It loads when it is called,
// while the fx.New options are put together: a load error fails fx.New
// with that error alone, every problem listed (fx.Error), before any
// constructor runs, rather than inside the chain fx wraps around the
// constructors that needed the configuration (O4).
func Module(path string, opts ...LoadOption) fx.Option {
	c, err := Load(path, opts...)
	if err != nil {
		return fx.Error(err)
	}
	return Supply(c)
}

// Supply provides an already loaded (or hand-built) configuration and its
// sections, for apps that call Load themselves.
func Supply(c *Config) fx.Option {
	return fx.Module("hostloom.config", fx.Provide(func() Sections { return Provide(c) }))
}
