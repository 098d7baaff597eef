package schedulingfx

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/scheduling"
)

// JobsGroup is the value group of JobSpec values (`group:"hostloom.jobs"`).
const JobsGroup = "hostloom.jobs"

// JobSpec is a job bound to the role whose leader runs it.
type JobSpec struct {
	Role string
	Job  scheduling.Job
}

// JobOption adjusts a job declared with Job.
type JobOption interface {
	apply(*scheduling.Job)
}

type jobOptionFunc func(*scheduling.Job)

func (f jobOptionFunc) apply(j *scheduling.Job) { f(j) }

// Timeout bounds each run of the job. Default: none.
func Timeout(d time.Duration) JobOption {
	return jobOptionFunc(func(j *scheduling.Job) { j.Timeout = d })
}

// Jitter delays each run by a random duration below d. Default: none.
func Jitter(d time.Duration) JobOption {
	return jobOptionFunc(func(j *scheduling.Job) { j.Jitter = d })
}

// Job runs fn on the cron spec (five fields, minute first; an optional
// leading seconds field; descriptors such as @hourly or "@every 5m";
// CRON_TZ= prefix) while this instance leads role. A spec that does not
// parse fails fx.New with an error naming the job and the role.
func Job(role, name, spec string, fn func(context.Context) error, opts ...JobOption) fx.Option {
	sched, err := scheduling.Cron(spec)
	if err != nil {
		return fx.Error(fmt.Errorf("schedulingfx: job %q of role %q: %w", name, role, err))
	}
	j := scheduling.Job{Name: name, Schedule: sched, Run: fn}
	for _, o := range opts {
		if o != nil {
			o.apply(&j)
		}
	}
	return Schedule(role, j)
}

// Schedule runs a ready-made job (for example on scheduling.Every) while
// this instance leads role.
func Schedule(role string, j scheduling.Job) fx.Option {
	spec := JobSpec{Role: role, Job: j}
	return contribute(fx.Annotate(func() JobSpec { return spec }, fx.ResultTags(`group:"`+JobsGroup+`"`)))
}

// JobFunc runs the job that ctor builds from its dependencies, while this
// instance leads role. ctor is a function whose parameters fx provides
// (plain types, named values through an fx.In struct) and that returns
// scheduling.Job, or (scheduling.Job, error).
//
//	schedulingfx.JobFunc("billing", func(db *sql.DB) scheduling.Job {
//		return scheduling.Job{Name: "invoices", Schedule: every, Run: invoices(db)}
//	})
func JobFunc(role string, ctor any) fx.Option {
	wrapped, err := bindRole(role, ctor)
	if err != nil {
		return fx.Error(err)
	}
	return contribute(fx.Annotate(wrapped, fx.ResultTags(`group:"`+JobsGroup+`"`)))
}

var (
	jobType   = reflect.TypeFor[scheduling.Job]()
	specType  = reflect.TypeFor[JobSpec]()
	errorType = reflect.TypeFor[error]()
)

// bindRole wraps ctor into a function with the same parameters that
// returns (JobSpec, error).
func bindRole(role string, ctor any) (any, error) {
	v := reflect.ValueOf(ctor)
	t := v.Type()
	if ctor == nil || t.Kind() != reflect.Func || t.IsVariadic() ||
		!(t.NumOut() == 1 && t.Out(0) == jobType || t.NumOut() == 2 && t.Out(0) == jobType && t.Out(1) == errorType) {
		return nil, fmt.Errorf("schedulingfx: JobFunc for role %q: %T is not a func(...) scheduling.Job or func(...) (scheduling.Job, error)", role, ctor)
	}
	in := make([]reflect.Type, t.NumIn())
	for i := range in {
		in[i] = t.In(i)
	}
	ft := reflect.FuncOf(in, []reflect.Type{specType, errorType}, false)
	return reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
		out := v.Call(args)
		var err error
		if len(out) == 2 && !out[1].IsNil() {
			err = out[1].Interface().(error)
		}
		spec := JobSpec{Role: role, Job: out[0].Interface().(scheduling.Job)}
		if err != nil {
			err = fmt.Errorf("schedulingfx: job constructor for role %q: %w", role, err)
		}
		return []reflect.Value{reflect.ValueOf(spec), reflect.ValueOf(&err).Elem()}
	}).Interface(), nil
}

// owner marks one contributing option; the one with the lowest address
// builds the schedulers for all of them, so there is one scheduler per
// role however many options contribute jobs.
type owner struct{ _ byte }

const ownersGroup = "hostloom.scheduling.owners"

type buildParams struct {
	fx.In

	Params
	Owners []*owner `group:"hostloom.scheduling.owners"`
}

// contribute adds a JobSpec provider and makes sure the schedulers are
// built (once per app) from every JobSpec.
func contribute(provider any) fx.Option {
	me := new(owner)
	return fx.Options(
		fx.Provide(provider),
		fx.Supply(fx.Annotated{Group: ownersGroup, Target: me}),
		fx.Invoke(func(p buildParams) error {
			for _, o := range p.Owners {
				if reflect.ValueOf(o).Pointer() < reflect.ValueOf(me).Pointer() {
					return nil // another option builds them
				}
			}
			_, err := New(p.Params)
			return err
		}),
	)
}

// Params are New's dependencies.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle

	// Jobs are every contributed job.
	Jobs []JobSpec `group:"hostloom.jobs"`

	// Electors are every role's elector (leadershipfx.Role adds them).
	Electors []*leadership.Elector `group:"hostloom.electors"`

	// Config holds the time zone, misfire window and slot store switch.
	// Absent (the zero value), config.Defaults().Scheduling applies.
	Config config.SchedulingConfig `optional:"true"`

	// Lock is the slot store (L8) when Config.SlotStore is set and the lock
	// coordinates.
	Lock *locking.DistributedLock `optional:"true"`

	Logger         *zap.Logger          `optional:"true"`
	MeterProvider  metric.MeterProvider `optional:"true"`
	TracerProvider trace.TracerProvider `optional:"true"`
}

// Schedulers are the schedulers New built, one per role with jobs.
type Schedulers struct {
	byRole map[string]*scheduling.Scheduler
}

// For returns role's scheduler, nil when role has no jobs.
func (s *Schedulers) For(role string) *scheduling.Scheduler { return s.byRole[role] }

// Roles returns the roles with a scheduler, sorted.
func (s *Schedulers) Roles() []string {
	roles := make([]string, 0, len(s.byRole))
	for r := range s.byRole {
		roles = append(roles, r)
	}
	slices.Sort(roles)
	return roles
}

// New builds one scheduler per role that has jobs, over that role's
// elector, adds the jobs, and registers each scheduler's Start and Stop on
// p.Lifecycle (when set). Every problem is reported at once: a job bound
// to a role without an elector, a job Add rejects (S6), a bad option.
//
// Because New needs the electors, fx has built them, and registered their
// hooks, before New registers the schedulers' hooks; fx runs OnStop hooks
// in reverse, so each scheduler stops (and waits for its runs) before its
// elector releases the lease (E11).
func New(p Params) (*Schedulers, error) {
	cfg := p.Config
	if reflect.ValueOf(cfg).IsZero() {
		cfg = config.Defaults().Scheduling
	}
	base, err := cfg.Options()
	if err != nil {
		return nil, err
	}
	base = append(base,
		scheduling.WithLogger(p.Logger),
		scheduling.WithMeterProvider(p.MeterProvider),
		scheduling.WithTracerProvider(p.TracerProvider),
	)
	if cfg.SlotStore && p.Lock != nil && p.Lock.Coordinated() {
		base = append(base, scheduling.WithSlotStore(p.Lock))
	}
	electors := map[string]*leadership.Elector{}
	for _, e := range p.Electors {
		electors[e.Role()] = e
	}
	specs := slices.Clone(p.Jobs)
	slices.SortStableFunc(specs, func(a, b JobSpec) int { return strings.Compare(a.Role, b.Role) })
	out := &Schedulers{byRole: map[string]*scheduling.Scheduler{}}
	failed := map[string]bool{}
	var errs []error
	for _, js := range specs {
		if failed[js.Role] {
			continue
		}
		s, ok := out.byRole[js.Role]
		if !ok {
			e := electors[js.Role]
			if e == nil {
				errs = append(errs, fmt.Errorf("schedulingfx: job %q is bound to role %q, which has no elector (add leadershipfx.Role(%q))", js.Job.Name, js.Role, js.Role))
				continue
			}
			s, err = scheduling.New(e, base...)
			if err != nil {
				errs = append(errs, fmt.Errorf("schedulingfx: role %q: %w", js.Role, err))
				failed[js.Role] = true
				continue
			}
			out.byRole[js.Role] = s
		}
		if err := s.Add(js.Job); err != nil {
			errs = append(errs, fmt.Errorf("schedulingfx: role %q: %w", js.Role, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if p.Lifecycle != nil {
		for _, role := range out.Roles() {
			s := out.byRole[role]
			p.Lifecycle.Append(fx.Hook{OnStart: s.Start, OnStop: s.Stop})
		}
	}
	return out, nil
}
