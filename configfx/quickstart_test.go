package configfx_test

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
	"github.com/hostloom/hostloom/schedulingfx"
)

// TestQuickStart_A3_ConfigErrorIsTheOnlyError runs the README's quick
// start composition (the app's zap logger, fx's log through it, the config
// module first) over a missing file, a misspelt key and a bad duration:
// the configuration's error is the first error logged and the only one,
// and it is the error Start returns.
func TestQuickStart_A3_ConfigErrorIsTheOnlyError(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"missing file", "", "locking.provider"},
		{"misspelt key", "locking:\n  provider: memory\nleadership:\n  leese: 20s\n", "leadership.leese"},
		{"bad duration", "locking:\n  provider: memory\nleadership:\n  lease: 20\n", "leadership.lease"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := "does-not-exist.yaml"
			if tc.yaml != "" {
				path = writeFile(t, tc.yaml)
			}
			core, logs := observer.New(zapcore.DebugLevel)
			app := fx.New(
				fx.Provide(func() *zap.Logger { return zap.New(core) }), // zap.NewProduction in the README
				leadershipfx.ZapEventLogger(),
				configfx.Module(path),
				lockingfx.Module,
				leadershipfx.Role("billing"),
				schedulingfx.Module,
				schedulingfx.Job("billing", "invoices", "*/5 * * * *", func(context.Context) error { return nil }),
				fx.Invoke(func(p struct {
					fx.In
					Billing leadership.Leadership `name:"billing"`
				}) {
				}),
				leadershipfx.Module,
			)
			err := app.Start(context.Background())
			if err == nil {
				t.Fatal("Start succeeded")
			}
			if !strings.HasPrefix(err.Error(), "config: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start error %q, want the config error naming %s", err, tc.want)
			}
			var errorLines []string
			for _, e := range logs.All() {
				if e.Level < zapcore.ErrorLevel {
					continue
				}
				line := e.Message
				for _, f := range e.Context {
					if f.Key == "error" {
						line += ": " + f.Interface.(error).Error()
					}
				}
				errorLines = append(errorLines, line)
			}
			if len(errorLines) != 1 || !strings.Contains(errorLines[0], err.Error()) {
				t.Fatalf("error lines logged:\n%s\nwant one, with %q", strings.Join(errorLines, "\n"), err)
			}
		})
	}
}
