package pglockfx

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/backends/postgres/pglockbuild"
	"github.com/hostloom/hostloom/lockingfx"
)

// Module adds provider postgres to the app: configfx.Module then accepts
// locking.provider: postgres and the locking.postgres keys, and
// lockingfx.Module builds the lock over pglock, on the graph's
// *pgxpool.Pool when it has one, else on a pool built from
// locking.postgres.dsn.
var Module = fx.Module("hostloom.pglock",
	fx.Provide(newBackend),
)

// Params are Module's dependencies.
type Params struct {
	fx.In

	// Pool is the app's own pool, used instead of building one from
	// locking.postgres.dsn. The app keeps closing it. Optional.
	Pool *pgxpool.Pool `optional:"true"`

	// Logger receives the description of the provider (DSN redacted) and
	// the start check's result. Optional.
	Logger *zap.Logger `optional:"true"`
}

func newBackend(p Params) lockingfx.BackendResult {
	return lockingfx.ProvideBackend(pglockbuild.Backend{Pool: p.Pool, Logger: p.Logger})
}
