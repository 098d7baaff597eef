package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
	"golang.org/x/term"
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

// isTerminal reports whether f is a terminal (not merely a character
// device such as /dev/null): release --force asks for confirmation only
// there.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
