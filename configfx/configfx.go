package configfx

import (
	"slices"

	"go.uber.org/fx"

	"github.com/hostloom/hostloom/config"
)

// Sections is what Module and Supply provide: the whole Config and each
// section, so a module can depend on the section it reads.
type Sections struct {
	fx.Out

	Config        *config.Config
	Locking       config.LockingConfig
	Leadership    config.LeadershipConfig
	LeaderChannel config.LeaderChannelConfig
	Scheduling    config.SchedulingConfig
}

// Provide returns c and its sections as Sections.
func Provide(c *config.Config) Sections {
	return Sections{
		Config:        c,
		Locking:       c.Locking,
		Leadership:    c.Leadership,
		LeaderChannel: c.LeaderChannel,
		Scheduling:    c.Scheduling,
	}
}

// BackendGroup is the fx value group of the config.Backend values Module
// passes to config.Load (config.WithBackends), so that locking.provider
// accepts their names and their sections load. A backend's fx module adds
// its backend to it (lockingfx.ProvideBackend does).
const BackendGroup = "hostloom.config_backends"

// backendParams are the backends of the graph.
type backendParams struct {
	fx.In

	Backends []config.Backend `group:"hostloom.config_backends"`
}

// Module loads the configuration with config.Load(path, opts...), with
// the backends of BackendGroup, and provides *config.Config and its
// sections (Sections).
//
// It reads nothing while the fx.New options are put together: the file
// and the environment are read when fx.New builds the graph, by the
// module's constructor, once. A load error fails fx.New with that error
// as it is, every problem listed, reported by the module's invoke rather
// than inside the chain fx wraps around the constructors that needed the
// configuration (O4). fx runs the invokes of fx.Module values in the order
// they appear in fx.New, before the top-level ones: put Module first, as
// the package example does, and a configuration error is the first error
// the app reports, and with leadershipfx.ZapEventLogger the only one.
func Module(path string, opts ...config.LoadOption) fx.Option {
	return fx.Module("hostloom.config",
		fx.Provide(fx.Private, func(p backendParams) *loaded {
			c, err := config.Load(path, append(slices.Clip(opts), config.WithBackends(p.Backends...))...)
			return &loaded{c: c, err: err}
		}),
		fx.Provide(func(l *loaded) (Sections, error) {
			if l.err != nil {
				return Sections{}, l.err
			}
			return Provide(l.c), nil
		}),
		fx.Invoke(func(l *loaded) error { return l.err }),
	)
}

// loaded is Load's result, kept so that Module's invoke reports its error
// as it is.
type loaded struct {
	c   *config.Config
	err error
}

// Supply provides an already loaded (or hand-built) configuration and its
// sections, for apps that call config.Load themselves.
func Supply(c *config.Config) fx.Option {
	return fx.Module("hostloom.config", fx.Provide(func() Sections { return Provide(c) }))
}
