package leadershipfx

import (
	"context"
	"reflect"
	"strconv"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
)

// ElectorsGroup is the value group holding every role's *leadership.Elector
// (`group:"hostloom.electors"`).
const ElectorsGroup = "hostloom.electors"

// RoleParams are the dependencies of a role's elector.
type RoleParams struct {
	fx.In

	Lifecycle fx.Lifecycle

	// Lock is the lock the election runs over (lockingfx.Module provides it).
	Lock locking.Lock

	// Config holds the timing and keys, with per-role overrides. Absent
	// (the zero value), config.Defaults().Leadership applies.
	Config config.LeadershipConfig `optional:"true"`

	// Logger, MeterProvider and TracerProvider are passed to the elector;
	// absent, it logs nothing and uses the OpenTelemetry globals.
	Logger         *zap.Logger          `optional:"true"`
	MeterProvider  metric.MeterProvider `optional:"true"`
	TracerProvider trace.TracerProvider `optional:"true"`
}

// RoleOption adjusts one role.
type RoleOption interface {
	apply(*roleSettings)
}

type roleSettings struct {
	adjust []func(*leadership.Options)
	extra  []leadership.Option
}

type roleOptionFunc func(*roleSettings)

func (f roleOptionFunc) apply(s *roleSettings) { f(s) }

// WithOptions adjusts the role's leadership.Options after they are read
// from config (for a value the code, not the deployment, decides). Default:
// none. Several apply in order.
func WithOptions(fn func(*leadership.Options)) RoleOption {
	return roleOptionFunc(func(s *roleSettings) {
		if fn != nil {
			s.adjust = append(s.adjust, fn)
		}
	})
}

// WithElectorOptions adds leadership.Option values after the ones built
// from the graph (logger, meter and tracer providers, identity), so they
// win. Default: none.
func WithElectorOptions(opts ...leadership.Option) RoleOption {
	return roleOptionFunc(func(s *roleSettings) { s.extra = append(s.extra, opts...) })
}

// Role runs an election for role name. It provides leadership.Leadership
// and *leadership.Elector named name (`name:"<role>"`) and adds the elector
// to the ElectorsGroup value group. Several roles per app are fine; a role
// declared twice fails fx.New.
//
// The elector is built when the app is built (invalid options or key fail
// fx.New). OnStart checks the composition (K5, and T2 strictly: a lease
// longer than the lock's MaxLease fails start with an error naming the role
// and both values) and then starts the election without waiting for it;
// OnStop calls Stop, which releases the lease (F1).
//
// Declaring a role means running it, so Role also invokes the elector:
// the election runs even when nothing in the app depends on it.
func Role(name string, opts ...RoleOption) fx.Option {
	var s roleSettings
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	tag := "name:" + strconv.Quote(name)
	return fx.Module("hostloom.role."+name,
		fx.Provide(fx.Annotate(
			func(p RoleParams) (leadership.Leadership, *leadership.Elector, *leadership.Elector, error) {
				e, err := newElector(name, p, s)
				return e, e, e, err
			},
			fx.ResultTags(tag, tag, `group:"`+ElectorsGroup+`"`),
		)),
		fx.Invoke(fx.Annotate(func(*leadership.Elector) {}, fx.ParamTags(tag))),
	)
}

// New builds the elector for role from p and registers its lifecycle on
// p.Lifecycle (when set): what Role provides, without fx.Annotate.
func New(role string, p RoleParams, opts ...RoleOption) (*leadership.Elector, error) {
	var s roleSettings
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	return newElector(role, p, s)
}

func newElector(role string, p RoleParams, s roleSettings) (*leadership.Elector, error) {
	cfg := p.Config
	if reflect.ValueOf(cfg).IsZero() {
		cfg = config.Defaults().Leadership
	}
	o := cfg.Options(role)
	for _, fn := range s.adjust {
		fn(&o)
	}
	eo := []leadership.Option{
		leadership.WithLogger(p.Logger),
		leadership.WithMeterProvider(p.MeterProvider),
		leadership.WithTracerProvider(p.TracerProvider),
		leadership.WithIdentity(cfg.Identity),
	}
	e, err := leadership.NewElector(role, p.Lock, o, append(eo, s.extra...)...)
	if err != nil {
		return nil, err
	}
	if p.Lifecycle != nil {
		p.Lifecycle.Append(fx.Hook{
			OnStart: func(ctx context.Context) error {
				if err := leadership.CheckComposition(role, o, p.Lock); err != nil {
					return err
				}
				return e.Start(ctx)
			},
			OnStop: e.Stop,
		})
	}
	return e, nil
}
