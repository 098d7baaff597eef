package schedulingfx

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/leadershipfx"
)

// JobsGroup is the value group of JobSpec values (`group:"hostloom.jobs"`).
const JobsGroup = "hostloom.jobs"

// JobSpec is a job bound to the role whose leader runs it.
type JobSpec struct {
	Role string
	Job  scheduling.Job

	err error // JobFunc's constructor failed: reported by New
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

// Overlap sets what happens to a slot that falls due while the job's
// previous run is still going (S2, S7). Default: scheduling.OverlapSkip.
// The key scheduling.jobs.<name>.overlap, when set, replaces it.
func Overlap(p scheduling.OverlapPolicy) JobOption {
	return jobOptionFunc(func(j *scheduling.Job) { j.Overlap = p })
}

// CatchUp sets which slots nobody started a new leader runs when it
// starts leading (S8). Default: scheduling.CatchUpLatest. The key
// scheduling.jobs.<name>.catch_up, when set, replaces it.
func CatchUp(p scheduling.CatchUpPolicy) JobOption {
	return jobOptionFunc(func(j *scheduling.Job) { j.CatchUp = p })
}

// Recover runs a slot whose run started but did not finish (its term
// ended, its process died) once more on the next leader, at least once
// per slot (S9). It needs a slot store with job records
// (scheduling.slot_store and a lock that coordinates). Default: off, at
// most once per slot.
func Recover() JobOption {
	return jobOptionFunc(func(j *scheduling.Job) { j.Recover = true })
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
	return contribute(role, fmt.Sprintf("job %q", j.Name),
		fx.Annotate(func() JobSpec { return spec }, fx.ResultTags(`group:"`+JobsGroup+`"`)))
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
	return contribute(role, "JobFunc",
		fx.Annotate(wrapped, fx.ResultTags(`group:"`+JobsGroup+`"`)))
}

var (
	jobType   = reflect.TypeFor[scheduling.Job]()
	specType  = reflect.TypeFor[JobSpec]()
	errorType = reflect.TypeFor[error]()
)

// bindRole wraps ctor into a function with the same parameters that
// returns a JobSpec. The constructor's error travels in the JobSpec, so
// that New reports it as it is (a failing group member would fail the
// schedulers' constructor, and fx would bury the error in its chain).
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
	ft := reflect.FuncOf(in, []reflect.Type{specType}, false)
	return reflect.MakeFunc(ft, func(args []reflect.Value) []reflect.Value {
		out := v.Call(args)
		spec := JobSpec{Role: role, Job: out[0].Interface().(scheduling.Job)}
		if len(out) == 2 && !out[1].IsNil() {
			spec.err = fmt.Errorf("schedulingfx: job constructor for role %q: %w", role, out[1].Interface().(error))
		}
		return []reflect.Value{reflect.ValueOf(spec)}
	}).Interface(), nil
}

// Module builds the schedulers from the JobsGroup value group: one per
// role with jobs, over that role's elector, attached to the role so it
// starts before the role's elector contends and stops before the elector
// releases its lease (E11); with leadershipfx.Module (last) that start
// comes after every OnStart hook of the app (O3). Optional: without it
// each role builds its own scheduler from the jobs bound to it, the first
// time one of Job, Schedule or JobFunc asks for it.
var Module = fx.Module("hostloom.scheduling", fx.Provide(provide))

// provide is Module's constructor. It never fails: a problem is kept in
// the Schedulers and returned by every job option's invoke, so fx.New
// reports it as it is rather than wrapped in a failed constructor's chain.
func provide(p Params) *Schedulers {
	s, err := New(p)
	if err != nil {
		return &Schedulers{err: err}
	}
	return s
}

type contributeParams struct {
	fx.In

	// Schedulers are Module's; absent without Module.
	Schedulers *Schedulers `optional:"true"`
	// Deps build the role's scheduler without Module.
	Deps Deps
}

// Deps are what a role's scheduler is built from, without Module.
type Deps struct {
	fx.In

	// Handles are the app's roles (leadershipfx.Role adds them).
	Handles []*leadershipfx.Handle `group:"hostloom.roles"`
	// Jobs are every contributed job.
	Jobs []JobSpec `group:"hostloom.jobs"`
	// Config: absent (the zero value), config.Defaults().Scheduling applies.
	Config config.SchedulingConfig `optional:"true"`
	// Lock is the slot store when Config.SlotStore is set and the lock
	// coordinates.
	Lock           *locking.DistributedLock `optional:"true"`
	Logger         *zap.Logger              `optional:"true"`
	MeterProvider  metric.MeterProvider     `optional:"true"`
	TracerProvider trace.TracerProvider     `optional:"true"`
}

// contribute adds a JobSpec provider and an invoke that fails fx.New with
// the schedulers' problems: through Module when the app has it, else
// through role's own scheduler, which the first option for role builds
// from every job bound to role.
func contribute(role, what string, provider any) fx.Option {
	return fx.Options(
		fx.Provide(provider),
		fx.Invoke(func(p contributeParams) error {
			if p.Schedulers != nil {
				return p.Schedulers.err
			}
			return attachToRole(role, what, p.Deps)
		}),
	)
}

// schedulerKey is the key of a role's scheduler among its attached work.
const schedulerKey = "hostloom.scheduler"

// attachToRole builds role's scheduler and attaches it to the role, once
// (without Module, the first job option for role asks).
func attachToRole(role, what string, d Deps) error {
	var h *leadershipfx.Handle
	for _, c := range d.Handles {
		if c.Name() == role {
			h = c
		}
	}
	if h == nil {
		return fmt.Errorf("schedulingfx: %s is bound to role %q, which has no elector (add leadershipfx.Role(%q))", what, role, role)
	}
	// Every job of the app, so that a key for another role's job passes;
	// the check gives the same answer for every role.
	cfg := d.Config
	if reflect.ValueOf(cfg).IsZero() {
		cfg = config.Defaults().Scheduling
	}
	if err := checkJobs(cfg, d.Jobs); err != nil {
		return err
	}
	_, err := roleScheduler(h, d)
	return err
}

// roleScheduler is the one way a role's scheduler is built and attached
// to the role, with Module or without: once per role, from every job
// bound to it, as the role's Work (started and stopped by the role, E11,
// H3).
func roleScheduler(h *leadershipfx.Handle, d Deps) (*roleWork, error) {
	if err := h.Err(); err != nil {
		return nil, err
	}
	w, err := h.AttachOnce(schedulerKey, func() (leadershipfx.Work, error) {
		cfg, base, err := baseOptions(d.Config, d.Lock, d.Logger, d.MeterProvider, d.TracerProvider)
		if err != nil {
			return nil, err
		}
		var specs []JobSpec
		for _, js := range d.Jobs {
			if js.Role == h.Name() {
				specs = append(specs, js)
			}
		}
		w, err := buildRole(h.Name(), h.Elector(), specs, cfg, base, jobStore(cfg, d.Lock), d.Logger)
		if w == nil {
			return nil, err // no typed nil in the interface
		}
		return w, err
	})
	if err != nil {
		return nil, err
	}
	return w.(*roleWork), nil
}

// checkJobs fails for a scheduling.jobs.<name> key naming no job of the
// app.
func checkJobs(cfg config.SchedulingConfig, specs []JobSpec) error {
	names := make([]string, 0, len(specs))
	for _, js := range specs {
		if js.err == nil {
			names = append(names, js.Job.Name)
		}
	}
	return cfg.CheckJobs(names...)
}

// jobStore reports whether the schedulers get a slot store that keeps job
// records (S9–S11).
func jobStore(cfg config.SchedulingConfig, lock *locking.DistributedLock) bool {
	return cfg.SlotStore && lock != nil && lock.Coordinated() && lock.Features().Jobs != nil
}

// Params are New's dependencies.
type Params struct {
	fx.In

	// Roles are the app's roles (leadershipfx.Module provides them).
	// Optional.
	Roles *leadershipfx.Roles `optional:"true"`

	// Handles are the roles declared with leadershipfx.Role, with or
	// without leadershipfx.Module: New attaches each scheduler to its
	// role's handle, else, for a role without one, to Roles.
	Handles []*leadershipfx.Handle `group:"hostloom.roles"`

	// Jobs are every contributed job.
	Jobs []JobSpec `group:"hostloom.jobs"`

	// Electors are every role's elector (leadershipfx.Role adds them).
	Electors []*leadership.Elector `group:"hostloom.electors"`

	// Config holds the time zone, misfire window, slot store switch and
	// per-job settings. Absent (the zero value),
	// config.Defaults().Scheduling applies.
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
	byRole map[string]*roleWork
	err    error // what Module's constructor could not build
}

// For returns role's scheduler, nil when role has no jobs.
func (s *Schedulers) For(role string) *scheduling.Scheduler {
	if w := s.byRole[role]; w != nil {
		return w.s
	}
	return nil
}

// Roles returns the roles with a scheduler, sorted.
func (s *Schedulers) Roles() []string {
	roles := make([]string, 0, len(s.byRole))
	for r := range s.byRole {
		roles = append(roles, r)
	}
	slices.Sort(roles)
	return roles
}

// baseOptions returns the section (the defaults for a zero value) and the
// scheduling options every role's scheduler shares.
func baseOptions(cfg config.SchedulingConfig, lock *locking.DistributedLock, log *zap.Logger,
	mp metric.MeterProvider, tp trace.TracerProvider) (config.SchedulingConfig, []scheduling.Option, error) {
	if reflect.ValueOf(cfg).IsZero() {
		cfg = config.Defaults().Scheduling
	}
	base, err := SchedulerOptions(cfg)
	if err != nil {
		return cfg, nil, err
	}
	base = append(base,
		scheduling.WithLogger(log),
		scheduling.WithMeterProvider(mp),
		scheduling.WithTracerProvider(tp),
	)
	if cfg.SlotStore && lock != nil && lock.Coordinated() {
		base = append(base, scheduling.WithSlotStore(lock))
	}
	return cfg, base, nil
}

// buildRole builds role's scheduler over e with the jobs in specs, each
// with its scheduling.jobs.<name> settings: every problem at once.
func buildRole(role string, e *leadership.Elector, specs []JobSpec, cfg config.SchedulingConfig, base []scheduling.Option,
	hasJobStore bool, log *zap.Logger) (*roleWork, error) {
	var errs []error
	for _, js := range specs {
		if js.err != nil {
			errs = append(errs, js.err)
		}
	}
	if e == nil {
		return nil, errors.Join(errs...) // the role's own error fails fx.New
	}
	opts := append(slices.Clone(base),
		scheduling.WithIdentity(e.Identity()),
		scheduling.WithRecoveryHold(leadership.Describe(e).Lease))
	s, err := scheduling.New(e, opts...)
	if err != nil {
		return nil, errors.Join(append(errs, fmt.Errorf("schedulingfx: role %q: %w", role, err))...)
	}
	if log == nil {
		log = zap.NewNop()
	}
	w := &roleWork{s: s, role: role, log: log, runs: map[uint64]leadershipfx.Activity{}}
	for _, js := range specs {
		if js.err != nil {
			continue
		}
		if err := s.Add(w.track(ApplyOverrides(cfg, js.Job))); err != nil {
			errs = append(errs, fmt.Errorf("schedulingfx: role %q: %w", role, err))
			continue
		}
		if o, ok := cfg.Job(js.Job.Name); ok && o.Paused != nil {
			key := "scheduling.jobs." + js.Job.Name + ".paused"
			if !hasJobStore {
				errs = append(errs, &config.FieldError{Key: key, Source: cfg.Source(key),
					Reason: "needs a slot store that keeps job records (scheduling.slot_store true and a lock that coordinates)"})
				continue
			}
			w.paused = append(w.paused, pausedSetting{job: js.Job.Name, paused: *o.Paused, key: key, source: cfg.Source(key)})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return w, nil
}

// New builds one scheduler per role that has jobs, over that role's
// elector, adds the jobs and attaches each scheduler to its role's
// leadershipfx.Handle, as the job options do without Module (one
// scheduler per role, whichever asks first). The scheduler starts with
// the role, before its elector contends, and stops, waiting for its runs,
// before the elector releases the lease (E11, H3). A run still going at
// the role's stop is named in the role's Warn log (O2). An elector without
// a Handle (built by leadershipfx.New) gets a scheduler attached through
// p.Roles, or, without Roles, one the caller starts and stops.
//
// Every problem is reported at once: a job bound to a role without an
// elector, a job Add rejects (S6), a failed job constructor, a bad option.
func New(p Params) (*Schedulers, error) {
	d := Deps{Handles: p.Handles, Jobs: p.Jobs, Config: p.Config, Lock: p.Lock, Logger: p.Logger,
		MeterProvider: p.MeterProvider, TracerProvider: p.TracerProvider}
	cfg, base, err := baseOptions(p.Config, p.Lock, p.Logger, p.MeterProvider, p.TracerProvider)
	if err != nil {
		return nil, err
	}
	electors := map[string]*leadership.Elector{}
	for _, e := range p.Electors {
		electors[e.Role()] = e
	}
	handles := map[string]*leadershipfx.Handle{}
	for _, h := range p.Handles {
		handles[h.Name()] = h
	}
	byRole := map[string][]JobSpec{}
	var errs []error
	for _, js := range p.Jobs {
		if electors[js.Role] == nil && handles[js.Role] == nil {
			if js.err != nil {
				errs = append(errs, js.err)
			} else {
				errs = append(errs, fmt.Errorf("schedulingfx: job %q is bound to role %q, which has no elector (add leadershipfx.Role(%q))", js.Job.Name, js.Role, js.Role))
			}
			continue
		}
		byRole[js.Role] = append(byRole[js.Role], js)
	}
	if err := checkJobs(cfg, p.Jobs); err != nil {
		errs = append(errs, err)
	}
	out := &Schedulers{byRole: map[string]*roleWork{}}
	for _, role := range slices.Sorted(maps.Keys(byRole)) {
		var w *roleWork
		var err error
		if h := handles[role]; h != nil {
			w, err = roleScheduler(h, d)
		} else {
			w, err = buildRole(role, electors[role], byRole[role], cfg, base, jobStore(cfg, p.Lock), p.Logger)
			if err == nil && p.Roles != nil {
				err = p.Roles.Attach(role, w)
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out.byRole[role] = w
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// roleWork is one role's scheduler as leadershipfx.Work: it knows which
// runs are going, and since when, for the role's shutdown warning.
type roleWork struct {
	s      *scheduling.Scheduler
	role   string
	log    *zap.Logger
	paused []pausedSetting // scheduling.jobs.<name>.paused, applied at Start

	mu   sync.Mutex
	next uint64
	runs map[uint64]leadershipfx.Activity
}

// track wraps j.Run so that each run is listed by Running while it goes.
// A nil Run stays nil, for Add to reject (S6).
func (w *roleWork) track(j scheduling.Job) scheduling.Job {
	run := j.Run
	if run == nil {
		return j
	}
	name := j.Name
	j.Run = func(ctx context.Context) error {
		w.mu.Lock()
		id := w.next
		w.next++
		w.runs[id] = leadershipfx.Activity{Kind: "job", Name: name, Since: time.Now()}
		w.mu.Unlock()
		defer func() {
			w.mu.Lock()
			delete(w.runs, id)
			w.mu.Unlock()
		}()
		return run(ctx)
	}
	return j
}

// pausedSetting is a job's scheduling.jobs.<name>.paused.
type pausedSetting struct {
	job    string
	paused bool
	key    string
	source string
}

// Start applies the paused settings and starts the scheduler
// (leadershipfx.Work). A store that cannot be reached is logged at Warn:
// the job keeps its stored state, and the app starts (E7).
func (w *roleWork) Start(ctx context.Context) error {
	for _, p := range w.paused {
		set := w.s.Resume
		if p.paused {
			set = w.s.Pause
		}
		if err := set(ctx, p.job); err != nil {
			if errors.Is(err, scheduling.ErrNoJobStore) {
				return &config.FieldError{Key: p.key, Source: p.source, Reason: err.Error()}
			}
			w.log.Warn("SchedulerPausedSettingFailed", zap.String("role", w.role), zap.String("job", p.job),
				zap.Bool("paused", p.paused), zap.String("key", p.key), zap.Error(err))
			continue
		}
		w.log.Info("SchedulerPausedSetting", zap.String("role", w.role), zap.String("job", p.job),
			zap.Bool("paused", p.paused), zap.String("source", p.source))
	}
	return w.s.Start(ctx)
}

// Stop stops the scheduler and waits for its runs (leadershipfx.Work).
func (w *roleWork) Stop(ctx context.Context) error { return w.s.Stop(ctx) }

// Running lists the runs still going, oldest first (leadershipfx.Work).
func (w *roleWork) Running() []leadershipfx.Activity {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]leadershipfx.Activity, 0, len(w.runs))
	for _, a := range w.runs {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b leadershipfx.Activity) int { return a.Since.Compare(b.Since) })
	return out
}

// SchedulerOptions returns the scheduling options cfg describes (time zone
// of cron expressions, misfire window), without the slot store (the
// composition supplies the lock). It lives here rather than in package
// config so that loading configuration links no scheduler.
func SchedulerOptions(cfg config.SchedulingConfig) ([]scheduling.Option, error) {
	loc, err := cfg.Location.Load()
	if err != nil {
		return nil, err
	}
	return []scheduling.Option{scheduling.WithLocation(loc), scheduling.WithMisfireWindow(cfg.MisfireWindow)}, nil
}

// ApplyOverrides returns j with the overrides of scheduling.jobs.<j.Name>
// in cfg applied (catch_up, overlap; paused is applied by the scheduler's
// start).
func ApplyOverrides(cfg config.SchedulingConfig, j scheduling.Job) scheduling.Job {
	o, ok := cfg.Job(j.Name)
	if !ok {
		return j
	}
	if o.CatchUp != nil {
		j.CatchUp = *o.CatchUp
	}
	if o.Overlap != nil {
		j.Overlap = *o.Overlap
	}
	return j
}
