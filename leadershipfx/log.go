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
func ZapEventLogger() fx.Option {
	return fx.WithLogger(func(l *zap.Logger) fxevent.Logger {
		zl := &fxevent.ZapLogger{Logger: l.Named("fx")}
		zl.UseLogLevel(zapcore.DebugLevel)
		return zl
	})
}
