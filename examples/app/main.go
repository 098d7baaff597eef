package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// embeddedConfig is config.yaml, read before any file.
//
//go:embed config.yaml
var embeddedConfig []byte

// settings are the command line.
type settings struct {
	configPath string
	httpAddr   string
	logFormat  string
	logLevel   zapcore.Level
	environ    []string // nil: os.Environ
}

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run parses args, runs the service until SIGINT or SIGTERM, and returns
// the exit code: 0 after a clean shutdown, 1 when starting or stopping
// failed, 2 for bad flags.
func run(args []string, stderr io.Writer) int {
	s, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log, err := newLogger(s.logFormat, s.logLevel, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	defer func() { _ = log.Sync() }()
	// go-redis reports every failed dial on its own process-wide logger;
	// the electors already log an outage once (E7), so keep go-redis's
	// lines at Debug. The process owns that global: main sets it, once.
	redis.SetLogger(redisLogger{log.Named("go-redis")})

	app := newApp(s, log)
	startCtx, cancel := context.WithTimeout(context.Background(), app.StartTimeout())
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		// Logged once already, without a stack trace, by fx's event log
		// (leadershipfx.ZapEventLogger): "start failed".
		return 1
	}
	sig := <-app.Wait()
	log.Info("ShuttingDown", zap.Stringer("signal", sig.Signal))
	stopCtx, cancelStop := context.WithTimeout(context.Background(), app.StopTimeout())
	defer cancelStop()
	if err := app.Stop(stopCtx); err != nil {
		log.Error("StopFailed", zap.Error(err))
		return 1
	}
	log.Info("Stopped")
	return sig.ExitCode
}

// redisLogger writes go-redis's internal log at Debug.
type redisLogger struct{ log *zap.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	if ce := l.log.Check(zapcore.DebugLevel, "GoRedis"); ce != nil {
		ce.Write(zap.String("detail", fmt.Sprintf(format, v...)))
	}
}

func parseFlags(args []string, stderr io.Writer) (settings, error) {
	fs := flag.NewFlagSet("hostloom-example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s := settings{}
	fs.StringVar(&s.configPath, "config", os.Getenv("HOSTLOOM_CONFIG"),
		"YAML file read over the embedded config.yaml (env HOSTLOOM_CONFIG); must exist when given")
	fs.StringVar(&s.httpAddr, "http", envOr("HOSTLOOM_HTTP_ADDR", "127.0.0.1:8080"),
		"HTTP listen address for /healthz, /readyz, /leadership, /jobs, /metrics and /dashboard/ (env HOSTLOOM_HTTP_ADDR); :0 picks a free port")
	fs.StringVar(&s.logFormat, "log-format", "console", "console or json")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %q\n", fs.Args())
		return s, errors.New("unexpected arguments")
	}
	if err := s.logLevel.Set(*level); err != nil {
		fmt.Fprintf(stderr, "-log-level %q: %v\n", *level, err)
		return s, err
	}
	return s, nil
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// newLogger writes to w, in the console format for people or JSON for
// machines.
func newLogger(format string, level zapcore.Level, w io.Writer) (*zap.Logger, error) {
	ec := zap.NewProductionEncoderConfig()
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	ec.EncodeDuration = zapcore.StringDurationEncoder
	var enc zapcore.Encoder
	switch format {
	case "console":
		ec.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	case "json":
		enc = zapcore.NewJSONEncoder(ec)
	default:
		return nil, fmt.Errorf("-log-format %q: want console or json", format)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), level)), nil
}
