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

	// Roles is Module's; New uses it to build an elector in the app's
	// process. Role does not need it.
	Roles *Roles `optional:"true"`

	// Lifecycle receives the hook that starts an elector New builds in
	// the app's process (with Roles). Role appends its own hook.
	Lifecycle fx.Lifecycle `optional:"true"`

	// Lock is the lock the election runs over (lockingfx.Module provides it).
	Lock locking.Lock

	// Balance, when the graph has one, is the balance group roles with
	// leadership.balance join instead of their process's own (B1).
	// Optional; nothing in HostLoom provides it any more: the app's
	// leadership.Process owns its balance group (H1).
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

// roleIn is what Role's handle is built from: the role's dependencies and
// every role's process slot.
// It is RoleParams without Roles and Lifecycle: Roles is built from
// every role's handle, which a handle cannot depend on.
type roleIn struct {
	fx.In

	Lock           locking.Lock
	Balance        *leadership.BalanceGroup `optional:"true"`
	Config         config.LeadershipConfig  `optional:"true"`
	Locking        config.LockingConfig     `optional:"true"`
	Logger         *zap.Logger              `optional:"true"`
	MeterProvider  metric.MeterProvider     `optional:"true"`
	TracerProvider trace.TracerProvider     `optional:"true"`
	Slots          []*processSlot           `group:"hostloom.process"`
}

func (in roleIn) params() RoleParams {
	return RoleParams{Lock: in.Lock, Balance: in.Balance, Config: in.Config, Locking: in.Locking,
		Logger: in.Logger, MeterProvider: in.MeterProvider, TracerProvider: in.TracerProvider}
}

// Role runs an election for role name. It provides leadership.Leadership,
// *leadership.Elector and *Handle named name (`name:"<role>"`), adds the
// elector to the ElectorsGroup value group and the handle to RolesGroup.
// Several roles per app are fine; a role declared twice fails fx.New.
// Every role of the app belongs to one leadership.Process (H1): one
// identity, one balance group, one leave.
//
// The elector is built when the app is built (invalid options or key fail
// fx.New with the elector's error, naming the role). An override
// leadership.roles.<name> naming no declared role fails fx.New, listing
// the declared roles (O4).
//
// Start order (O3'): Role appends the role's own OnStart hook where it
// stands in fx.New, as fx appends hooks while it runs invokes (the
// invokes of nested fx.Module options first, then the enclosing ones in
// order). Declared after the app's other options, the role begins
// contending after every hook appended before it; a hook appended after
// it that fails makes fx stop the role, which releases its lease before
// Start returns. The hook checks the composition (K5, and T2 strictly: a
// lease longer than the lock's MaxLease fails start with an error naming
// the role and both values), starts the work attached to the role and
// then the election (F1).
//
// Stop order: the first role's OnStop that fx runs makes the process
// leave, every role at once (H2): each role's work is cancelled and
// waited for, then its lease released (E11, O2).
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
	return fx.Options(
		fx.Module(module,
			fx.Provide(fx.Annotate(
				func() *processSlot { return &processSlot{} },
				fx.ResultTags(`group:"`+processGroup+`"`),
			)),
			// The handle's constructor never fails: a bad role's error is
			// kept in the handle and returned by the invoke below, which
			// runs before the invokes of the enclosing modules, so fx.New
			// reports the elector's own error rather than the chain fx
			// wraps around a failed constructor.
			fx.Provide(fx.Annotate(
				func(in roleIn) (*Handle, *Handle) {
					h := newHandle(name, in.params(), in.Slots, s)
					return h, h
				},
				fx.ResultTags(tag, `group:"`+RolesGroup+`"`),
			)),
			fx.Provide(fx.Annotate(
				func(h *Handle) (leadership.Leadership, *leadership.Elector, *leadership.Elector, error) {
					if h.err != nil {
						return nil, nil, nil, h.err
					}
					return h.e, h.e, h.e, nil
				},
				fx.ParamTags(tag),
				fx.ResultTags(tag, tag, `group:"`+ElectorsGroup+`"`),
			)),
			fx.Invoke(fx.Annotate(
				func(h *Handle, all []*Handle) error { return h.declare(all) },
				fx.ParamTags(tag, `group:"`+RolesGroup+`"`),
			)),
		),
		// Outside the module, where Role stands: the role's hook is
		// appended in the app's order (O3', STYLE's documented
		// exception: declaring a role means running it).
		fx.Invoke(fx.Annotate(
			func(h *Handle, lc fx.Lifecycle) { h.register(lc) },
			fx.ParamTags(tag),
		)),
	)
}

// New builds the elector for role from p. With p.Roles it belongs to the
// app's process: it leaves with the app's roles, and starts from a hook
// it appends to p.Lifecycle (without one, the caller starts it with the
// process's StartRole). Without p.Roles it belongs to a process of its
// own, and the caller starts and stops it.
func New(role string, p RoleParams, opts ...RoleOption) (*leadership.Elector, error) {
	var s roleSettings
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	var slots []*processSlot
	if p.Roles != nil && p.Roles.app != nil {
		slots = []*processSlot{{app: p.Roles.app}}
	}
	h := newHandle(role, p, slots, s)
	if h.err != nil {
		return nil, h.err
	}
	if len(slots) > 0 && p.Lifecycle != nil {
		h.register(p.Lifecycle)
	}
	return h.e, nil
}

// electorOptions returns the role's leadership.Options, from config and
// the role's adjustments, and its elector options (logger, meter and
// tracer providers, then the role's own).
func electorOptions(role string, p RoleParams, s roleSettings) (leadership.Options, []leadership.Option) {
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
	}
	if p.Balance != nil {
		eo = append(eo, leadership.WithBalanceGroup(p.Balance))
	}
	return o, append(eo, s.extra...)
}
