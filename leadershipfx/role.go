package leadershipfx

import (
	"fmt"
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

	// Roles coordinates the app's roles (Module provides it). Absent, a
	// Role fails fx.New asking for Module, and New returns an elector the
	// caller starts and stops.
	Roles *Roles `optional:"true"`

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
// declared twice fails fx.New. The app must also use Module, last.
//
// The elector is built when the app is built (invalid options or key fail
// fx.New with the elector's error, naming the role). At start, Roles checks
// the composition (K5, and T2 strictly: a lease longer than the lock's
// MaxLease fails start with an error naming the role and both values) and,
// after every other OnStart hook succeeded, starts the election (O3); at
// stop it stops the role's work and then the elector, which releases the
// lease (F1, E11, O2).
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
	build := func(p RoleParams) (*leadership.Elector, error) {
		if p.Roles == nil {
			return nil, fmt.Errorf("leadershipfx: role %s: leadershipfx.Module is missing: add it to fx.New, last", quoteRole(name))
		}
		return p.Roles.elector(name, p.Lock, func() (*leadership.Elector, leadership.Options, error) {
			return newElector(name, p, s)
		})
	}
	module := "hostloom.role." + name
	if len(name) > longRole {
		module = "hostloom.role." + shortRole(name)
	}
	return fx.Module(module,
		fx.Provide(fx.Annotate(
			func(p RoleParams) (leadership.Leadership, *leadership.Elector, *leadership.Elector, error) {
				e, err := build(p)
				return e, e, e, err
			},
			fx.ResultTags(tag, tag, `group:"`+ElectorsGroup+`"`),
		)),
		// The invoke builds the elector too, and runs before the invokes of
		// the enclosing modules: a bad role fails fx.New with the
		// elector's own error, not the chain fx wraps around a failed
		// constructor.
		fx.Invoke(func(p RoleParams) error {
			_, err := build(p)
			return err
		}),
	)
}

// New builds the elector for role from p. With p.Roles it joins the app's
// roles (started and stopped by Module's hooks, like Role's); without, the
// caller starts and stops it.
func New(role string, p RoleParams, opts ...RoleOption) (*leadership.Elector, error) {
	var s roleSettings
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	if p.Roles == nil {
		e, _, err := newElector(role, p, s)
		return e, err
	}
	return p.Roles.elector(role, p.Lock, func() (*leadership.Elector, leadership.Options, error) {
		return newElector(role, p, s)
	})
}

func newElector(role string, p RoleParams, s roleSettings) (*leadership.Elector, leadership.Options, error) {
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
		return nil, o, roleError(role, err)
	}
	return e, o, nil
}
