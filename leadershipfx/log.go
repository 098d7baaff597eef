package leadershipfx

import (
	"errors"
	"sync"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// ZapEventLogger routes fx's own event log through the app's *zap.Logger
// (which the app provides), named "fx": the routine events (provide,
// invoke, hooks run) at Debug, failures at Error.
//
// An error that fails fx.New is logged once, where it happened (a failed
// invoke, such as configfx.Module's configuration error): fx reports it
// again when Start (or Run) returns it, and that second report is left
// out, so the first error line an app prints is the one to fix, and the
// only one.
func ZapEventLogger() fx.Option {
	return fx.WithLogger(func(l *zap.Logger) fxevent.Logger {
		zl := &fxevent.ZapLogger{Logger: l.Named("fx")}
		zl.UseLogLevel(zapcore.DebugLevel)
		return &eventLogger{Logger: zl}
	})
}

// eventLogger drops fx's Started event that repeats the error of a failed
// invoke already logged.
type eventLogger struct {
	fxevent.Logger

	mu     sync.Mutex
	failed error // the first failed invoke's error: it fails fx.New
}

// LogEvent implements fxevent.Logger.
func (l *eventLogger) LogEvent(e fxevent.Event) {
	switch e := e.(type) {
	case *fxevent.Invoked:
		if e.Err != nil {
			l.mu.Lock()
			if l.failed == nil {
				l.failed = e.Err
			}
			l.mu.Unlock()
		}
	case *fxevent.Started:
		l.mu.Lock()
		failed := l.failed
		l.mu.Unlock()
		if e.Err != nil && failed != nil && (errors.Is(e.Err, failed) || e.Err.Error() == failed.Error()) {
			return
		}
	}
	l.Logger.LogEvent(e)
}
