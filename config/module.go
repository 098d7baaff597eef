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

// Module loads the configuration with Load(path, opts...) when the app is
// built and provides *Config and its sections (LockingConfig,
// LeadershipConfig, LeaderChannelConfig, SchedulingConfig). A load error
// fails fx.New with every problem listed.
func Module(path string, opts ...LoadOption) fx.Option {
	return fx.Module("hostloom.config",
		fx.Provide(func() (Sections, error) {
			c, err := Load(path, opts...)
			if err != nil {
				return Sections{}, err
			}
			return Provide(c), nil
		}),
	)
}

// Supply provides an already loaded (or hand-built) configuration and its
// sections, for apps that call Load themselves.
func Supply(c *Config) fx.Option {
	return fx.Module("hostloom.config", fx.Provide(func() Sections { return Provide(c) }))
}
