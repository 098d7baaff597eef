package leadershipfx_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/leadershipfx"
)

// TestZapEventLogger_A3_StartErrorOnceWithoutStack: with a logger built as
// zap.NewProduction builds it (a stack trace on every Error entry), a
// start that fails, in an invoke or in an OnStart hook, is one Error line
// naming the error, with no stack trace of fx's or zap's.
func TestZapEventLogger_A3_StartErrorOnceWithoutStack(t *testing.T) {
	errBoom := errors.New("boom: the database refused the password")
	for name, opt := range map[string]fx.Option{
		"invoke": fx.Invoke(func() error { return errBoom }),
		"hook": fx.Invoke(func(lc fx.Lifecycle) {
			lc.Append(fx.Hook{OnStart: func(context.Context) error { return errBoom }})
		}),
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
			log := zap.New(zapcore.NewCore(enc, zapcore.AddSync(&buf), zapcore.InfoLevel), zap.AddStacktrace(zapcore.ErrorLevel))
			app := fx.New(fx.Supply(log), leadershipfx.ZapEventLogger(), opt)
			if err := app.Start(context.Background()); !errors.Is(err, errBoom) {
				t.Fatalf("Start = %v, want %v", err, errBoom)
			}
			out := buf.String()
			if strings.Count(out, "\n") != 1 || strings.Count(out, errBoom.Error()) != 1 || !strings.Contains(out, `"level":"error"`) {
				t.Errorf("want one error line with %q, logged:\n%s", errBoom, out)
			}
			if strings.Contains(out, "stack") {
				t.Errorf("a stack trace was logged:\n%s", out)
			}
		})
	}
}
