package buildapi

import (
	"context"

	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/locking"
)

// Provided is what a backend's Build returns (lockbuild.Provided).
type Provided struct {
	// Provider is the backend's provider. Required.
	Provider locking.Provider
	// Close, when not nil, runs once at Built.Close, after the lock (and
	// so the provider) closed: it releases what Build opened, such as a
	// client or a pool, never what the app supplied.
	Close func() error
	// Check, when not nil, contacts the server once, through l (the lock
	// built over Provider); lockingfx runs it when the app starts, the
	// hostloom CLI before a command. A *config.FieldError means the server
	// refuses the configuration (credentials, a table), which retrying
	// cannot cure: start fails. Any other error is an outage, which the
	// electors ride out. The backend logs what it finds, if it was given
	// a logger.
	Check func(ctx context.Context, l *locking.DistributedLock) error
	// LogFields describe the backend in lockingfx's HostLoomLock line,
	// secrets redacted. Optional.
	LogFields []zap.Field
}
