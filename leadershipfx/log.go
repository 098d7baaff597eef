package leadershipfx

import (
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// ZapEventLogger routes fx's own event log through the app's *zap.Logger
// (which the app provides), named "fx": the routine events (provide,
// invoke, hooks run) at Debug, failures at Error.
//
// An error that fails the start is logged once, at Error, when Start (or
// Run) returns it ("start failed"), without a stack trace: neither fx's
// (the stack of the invoke that failed, fx's machinery rather than the
// app's) nor zap's (a logger built with zap.NewProduction adds one to
// every Error entry; this logger adds none). fx's earlier reports of the
// same error, as a failed invoke (such as configfx.Module's configuration
// error), a failed OnStart hook or the rollback that follows it, are left
// out, so the error line an app prints is the one to fix, and the only
// one. An app that calls Start itself should therefore not log Start's
// error again; one that builds fx.New without starting it reads the error
// from App.Err.
func ZapEventLogger() fx.Option {
	return fx.WithLogger(func(l *zap.Logger) fxevent.Logger {
		l = l.Named("fx").WithOptions(zap.AddStacktrace(zap.LevelEnablerFunc(func(zapcore.Level) bool { return false })))
		zl := &fxevent.ZapLogger{Logger: l}
		zl.UseLogLevel(zapcore.DebugLevel)
		return &eventLogger{Logger: zl}
	})
}

// eventLogger drops fx's reports of a start error that the Started event
// reports again.
type eventLogger struct {
	fxevent.Logger
}

// LogEvent implements fxevent.Logger.
func (l *eventLogger) LogEvent(e fxevent.Event) {
	switch e := e.(type) {
	case *fxevent.Invoked:
		if e.Err != nil {
			return // fails fx.New: Start returns it, Started reports it
		}
	case *fxevent.OnStartExecuted:
		if e.Err != nil {
			return // Start returns it after the rollback, Started reports it
		}
	case *fxevent.RollingBack:
		return // the start error again; Started reports it, RolledBack a failed rollback
	}
	l.Logger.LogEvent(e)
}
