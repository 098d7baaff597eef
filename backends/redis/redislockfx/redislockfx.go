package redislockfx

import (
	"github.com/redis/go-redis/v9"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/backends/redis/redislockbuild"
	"github.com/hostloom/hostloom/lockingfx"
)

// Module adds provider redis to the app: configfx.Module then accepts
// locking.provider: redis and the locking.redis keys, and
// lockingfx.Module builds the lock over redislock.
var Module = fx.Module("hostloom.redis",
	fx.Provide(newBackend),
)

// Params are Module's dependencies.
type Params struct {
	fx.In

	// Client is the app's own Redis client, used instead of building one
	// from locking.redis. The app keeps closing it, and checking its
	// credentials. Optional.
	Client redis.UniversalClient `optional:"true"`

	// Logger receives the start check's findings and, for a client the
	// backend builds, go-redis's own log at Debug. Optional.
	Logger *zap.Logger `optional:"true"`
}

func newBackend(p Params) lockingfx.BackendResult {
	return lockingfx.ProvideBackend(redislockbuild.Backend{Client: p.Client, Logger: p.Logger})
}
