package leadership

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// instrumentationScope is the OpenTelemetry scope of this package's meter
// and tracer: its import path.
const instrumentationScope = "github.com/hostloom/hostloom/core/leadership"

// Option configures an Elector or a Channel.
type Option interface {
	apply(*settings)
}

type settings struct {
	logger    *zap.Logger
	loggerSet bool // logger given by WithLogger (else the no-op default)
	meters    metric.MeterProvider
	tracers   trace.TracerProvider
	identity  string
	balance   *BalanceGroup
	// The gates and clock of the Process creating the elector (see
	// Process.Elector); nil for an elector of its own.
	gates *processGates
	clock *clock
	// caps is what the Process's lock can do, resolved once for all its
	// electors; nil: the elector resolves it.
	caps *capabilities
}

type optionFunc func(*settings)

func (f optionFunc) apply(s *settings) { f(s) }

// WithLogger sets the logger. Default: zap.NewNop(). A nil logger keeps the
// default.
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(s *settings) {
		if l != nil {
			s.logger = l
			s.loggerSet = true
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

// WithTracerProvider sets the OpenTelemetry tracer provider. Default: the
// global provider (otel.GetTracerProvider). A nil provider keeps the
// default.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(s *settings) {
		if tp != nil {
			s.tracers = tp
		}
	})
}

// WithIdentity sets the identity this instance stores with its lease and
// reports in logs and Describe. Default: locking.DefaultOwner()
// ("hostname:pid"). An empty identity keeps the default.
func WithIdentity(id string) Option {
	return optionFunc(func(s *settings) {
		if id != "" {
			s.identity = id
		}
	})
}

// nopLogger is the default logger, shared: a no-op logger holds no state.
var nopLogger = zap.NewNop()

// newSettings applies opts over the defaults.
func newSettings(opts []Option) settings {
	s := settings{
		logger:  nopLogger,
		meters:  otel.GetMeterProvider(),
		tracers: otel.GetTracerProvider(),
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	return s
}
