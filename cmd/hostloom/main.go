package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

func main() {
	// go-redis logs dial failures to stderr on its own; the CLI reports
	// every failure itself, in one line, so its internal log is dropped.
	redis.SetLogger(quietLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], stdio{
		in:      os.Stdin,
		out:     os.Stdout,
		err:     os.Stderr,
		tty:     isTerminal(os.Stdin),
		environ: os.Environ(),
	})
	stop()
	os.Exit(code)
}

// quietLogger discards go-redis's internal log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// isTerminal reports whether f is a character device (a terminal), the
// test release --force uses before asking for confirmation.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
