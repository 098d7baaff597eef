package scheduling

import (
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/scheduling/policy"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// instrumentationScope is the OpenTelemetry scope of this package's meter
// and tracer: its import path.
const instrumentationScope = "github.com/hostloom/hostloom/core/scheduling"

// DefaultMisfireWindow is how old a slot nobody started may be for a new
// leader to still run it (WithMisfireWindow).
const DefaultMisfireWindow = policy.DefaultMisfireWindow

// Option configures a Scheduler.
type Option interface {
	apply(*settings)
}

type settings struct {
	logger  *zap.Logger
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	store   slotstore.State
	misfire time.Duration
	loc     *time.Location
	id      string
	hold    time.Duration
	holdSet bool
}

type optionFunc func(*settings)

func (f optionFunc) apply(s *settings) { f(s) }

// WithLogger sets the logger. Default: zap.NewNop(). A nil logger keeps the
// default.
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(s *settings) {
		if l != nil {
			s.logger = l
		}
	})
}

// WithMeterProvider sets the OpenTelemetry meter provider. Default: the
// global provider (otel.GetMeterProvider). A nil provider keeps the default.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(s *settings) {
		if mp != nil {
			s.meters = mp
		}
	})
}

// WithTracerProvider sets the OpenTelemetry tracer provider; each run is a
// span. Default: the global provider (otel.GetTracerProvider). A nil
// provider keeps the default.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(s *settings) {
		if tp != nil {
			s.tracers = tp
		}
	})
}

// WithSlotStore records each job's started slots in store (L8), under the
// key JobKey(role, job) = "sched:{role}:{job}" with the slot's Unix time in
// milliseconds, before the run starts: a slot some replica already started
// is never started again, and a new leader can run a slot nobody started
// (WithMisfireWindow, Job.CatchUp). When store is also a slotstore.Jobs
// (*locking.DistributedLock over redislock or memlock), the scheduler
// keeps the job's records there: completion, recovery (Job.Recover), pause
// and history; otherwise it only claims (Advance). A store that reports
// its features (locking.Features) without Jobs is treated as no store: a
// *locking.DistributedLock whose provider keeps no job records. Default: none (see the package documentation for what holds
// without it). A nil store keeps the default.
func WithSlotStore(store slotstore.State) Option {
	return optionFunc(func(s *settings) {
		if store != nil {
			s.store = store
		}
	})
}

// WithMisfireWindow sets how old a slot may be for a new leader to run it
// when nobody started it: when this instance starts leading (also when it
// already leads at Start), each job's latest slot within the window is run
// once, unless the slot store shows it was started; older slots nobody
// started are counted as missed and not run. It needs WithSlotStore (without
// a store nobody can tell whether a slot was started, so none is replayed).
// Zero disables catching up. Default: DefaultMisfireWindow (1m). A negative
// window makes New fail.
func WithMisfireWindow(d time.Duration) Option {
	return optionFunc(func(s *settings) {
		s.misfire = d
	})
}

// WithLocation sets the time zone of cron expressions that do not name one
// (CRON_TZ=). Default: time.UTC, not time.Local, so that replicas whose
// machines are set to different zones still agree on every slot. A nil
// location keeps the default.
func WithLocation(loc *time.Location) Option {
	return optionFunc(func(s *settings) {
		if loc != nil {
			s.loc = loc
		}
	})
}

// WithIdentity sets the identity recorded with each run in the job's
// history (RunRecord.Identity). Default: the Leadership's own identity when
// it reports one and its lease (methods Identity and Lease, as a
// *leadership.Elector has), else locking.DefaultOwner(). An empty identity
// keeps the default.
func WithIdentity(id string) Option {
	return optionFunc(func(s *settings) {
		if id != "" {
			s.id = id
		}
	})
}

// WithRecoveryHold sets how long after a claim the claiming term has
// certainly ended, for recovery (Job.Recover, S9): a slot whose attempt
// never reported its end is re-run no sooner than this long after that
// attempt's claim, measured on the store's clock. It must be at least the
// lease of the leadership (a term that is not renewed ends within one
// lease of its latest renewal, and a successor only leads once it ended).
// Default: the Leadership's own lease when it reports one and its
// identity (methods Identity and Lease, as a *leadership.Elector has: its
// effective lease), else leadership.DefaultLease. Negative makes New fail.
func WithRecoveryHold(d time.Duration) Option {
	return optionFunc(func(s *settings) {
		s.hold, s.holdSet = d, true
	})
}

// newSettings applies opts over the defaults.
func newSettings(opts []Option) settings {
	s := settings{
		logger:  zap.NewNop(),
		meters:  otel.GetMeterProvider(),
		tracers: otel.GetTracerProvider(),
		misfire: DefaultMisfireWindow,
		loc:     time.UTC,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	return s
}
