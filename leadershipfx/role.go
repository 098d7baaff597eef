package leadershipfx

import (
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
	// Role starts and stops its elector from a hook of its own, and New
	// returns an elector the caller starts and stops.
	Roles *Roles `optional:"true"`

	// Lifecycle receives a Role's own hook when Roles is absent; when it is
	// lockingfx.Module's (internal/fxhooks), the hook is deferred until
	// every other OnStart hook has started (O3).
	Lifecycle fx.Lifecycle `optional:"true"`

	// Lock is the lock the election runs over (lockingfx.Module provides it).
	Lock locking.Lock

	// Balance is the app's balance group (lockingfx.Module provides it),
	// joined by roles with leadership.balance set (B1). Optional.
	Balance *leadership.BalanceGroup `optional:"true"`

	// Config holds the timing and keys, with per-role overrides. Absent
	// (the zero value), config.Defaults().Leadership applies.
	Config config.LeadershipConfig `optional:"true"`

	// Locking is the lock's config section, when the graph has it: a
	// lease above locking.max_lease or a key above max_key_length is then
	// reported with the keys and sources of both values (O4).
	Locking config.LockingConfig `optional:"true"`

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

// RolesGroup is the value group holding every role's *Handle
// (`group:"hostloom.roles"`).
const RolesGroup = "hostloom.roles"

// Role runs an election for role name. It provides leadership.Leadership,
// *leadership.Elector and *Handle named name (`name:"<role>"`), adds the
// elector to the ElectorsGroup value group and the handle to RolesGroup.
// Several roles per app are fine; a role declared twice fails fx.New.
//
// The elector is built when the app is built (invalid options or key fail
// fx.New with the elector's error, naming the role). At start the role
// checks the composition (K5, and T2 strictly: a lease longer than the
// lock's MaxLease fails start with an error naming the role and both
// values) and starts the election; at stop it stops the role's work and
// then the elector, which releases the lease (F1, E11). An override
// leadership.roles.<name> naming no declared role fails fx.New, listing
// the declared roles (O4).
//
// With Module (last in fx.New) the roles start after every other OnStart
// hook succeeded (O3) and stop in parallel (O2). Without Module each role
// starts its elector from its own OnStart hook, registered when the role
// is built (after the lock's), and stops it from that hook's OnStop:
// hooks appended after it run once the election has begun, and roles stop
// one after the other, in reverse order. The first role by name then logs
// LeadershipModuleAbsent at Info when the app starts.
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
	module := "hostloom.role." + name
	if len(name) > longRole {
		module = "hostloom.role." + shortRole(name)
	}
	return fx.Module(module,
		// The handle's constructor never fails: a bad role's error is kept
		// in the handle and returned by the invoke below, which runs before
		// the invokes of the enclosing modules, so fx.New reports the
		// elector's own error rather than the chain fx wraps around a
		// failed constructor.
		fx.Provide(fx.Annotate(
			func(p RoleParams) (*Handle, *Handle) {
				h := newHandle(name, p, s)
				return h, h
			},
			fx.ResultTags(tag, `group:"`+RolesGroup+`"`),
		)),
		fx.Provide(fx.Annotate(
			func(h *Handle) (leadership.Leadership, *leadership.Elector, *leadership.Elector, error) {
				if h.err != nil {
					return nil, nil, nil, h.err
				}
				e := h.ro.elector
				return e, e, e, nil
			},
			fx.ParamTags(tag),
			fx.ResultTags(tag, tag, `group:"`+ElectorsGroup+`"`),
		)),
		fx.Invoke(fx.Annotate(
			func(h *Handle, all []*Handle) error { return h.declare(all) },
			fx.ParamTags(tag, `group:"`+RolesGroup+`"`),
		)),
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
	ro, err := p.Roles.join(role, p.Lock, func() (*leadership.Elector, leadership.Options, error) {
		return newElector(role, p, s)
	})
	if err != nil {
		return nil, err
	}
	return ro.elector, nil
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
		leadership.WithBalanceGroup(p.Balance),
	}
	e, err := leadership.NewElector(role, p.Lock, o, append(eo, s.extra...)...)
	if err != nil {
		return nil, o, roleError(role, err)
	}
	return e, o, nil
}
