package config

import "go.uber.org/fx"

// Result is what Module provides: the whole Config and each section, so a
// module can depend on the section it reads.
type Result struct {
	fx.Out

	Config        *Config
	Locking       Locking
	Leadership    Leadership
	LeaderChannel LeaderChannel
	Scheduling    Scheduling
}

// Provide returns c and its sections as a Result.
func Provide(c *Config) Result {
	return Result{
		Config:        c,
		Locking:       c.Locking,
		Leadership:    c.Leadership,
		LeaderChannel: c.LeaderChannel,
		Scheduling:    c.Scheduling,
	}
}

// Module loads the configuration with Load(path, opts...) when the app is
// built and provides *Config and its sections (Locking, Leadership,
// LeaderChannel, Scheduling). A load error fails fx.New with every
// problem listed.
func Module(path string, opts ...Option) fx.Option {
	return fx.Module("hostloom.config",
		fx.Provide(func() (Result, error) {
			c, err := Load(path, opts...)
			if err != nil {
				return Result{}, err
			}
			return Provide(c), nil
		}),
	)
}

// Supply provides an already loaded (or hand-built) configuration and its
// sections, for apps that call Load themselves.
func Supply(c *Config) fx.Option {
	return fx.Module("hostloom.config", fx.Provide(func() Result { return Provide(c) }))
}
