package pglockfx

import (
	"context"
	"errors"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock/pglockbuild"
	"github.com/hostloom/hostloom/lockingfx"
)

// Module adds provider postgres to lockingfx.Module's providers (the value
// group lockingfx.ProviderGroup, as lockingfx.WithProvider does), built
// over the graph's *pgxpool.Pool when it has one, else over a pool built
// from locking.postgres.dsn.
var Module = fx.Module("hostloom.pglock",
	fx.Provide(fx.Annotate(newNamedProvider, fx.ResultTags(`group:"`+lockingfx.ProviderGroup+`"`))),
)

// Params are Module's dependencies.
type Params struct {
	fx.In

	Lifecycle fx.Lifecycle

	// Pool is the app's own pool, used instead of building one from
	// locking.postgres.dsn. The app keeps closing it. Optional.
	Pool *pgxpool.Pool `optional:"true"`

	// Logger receives the description of the provider (DSN redacted) and
	// the start check's result. Optional.
	Logger *zap.Logger `optional:"true"`
}

func newNamedProvider(p Params) lockingfx.NamedProvider {
	log := p.Logger
	if log == nil {
		log = zap.NewNop()
	}
	build := func(cfg config.LockingConfig) (locking.Provider, func() error, error) {
		if p.Pool != nil {
			log.Info("HostLoomLockPostgres", zap.Bool("app_pool", true), zap.Object("postgres", cfg.Postgres))
			return pglockbuild.WithPool(p.Pool)(cfg)
		}
		pool, prov, closeFn, err := pglockbuild.NewPool(cfg)
		if err != nil {
			return nil, nil, err
		}
		log.Info("HostLoomLockPostgres", zap.Bool("app_pool", false), zap.Object("postgres", cfg.Postgres))
		if p.Lifecycle != nil {
			p.Lifecycle.Append(fx.Hook{OnStart: func(ctx context.Context) error {
				err := pglockbuild.Check(ctx, pool, prov, cfg)
				var fe *config.FieldError
				switch {
				case err == nil:
					return nil
				case errors.As(err, &fe):
					log.Error("HostLoomLockConfigRefused", zap.String("key", fe.Key), zap.String("source", fe.Source), zap.String("reason", fe.Reason))
					// fx runs no OnStop for this hook, nor for lockingfx's
					// (appended after it): close what was built here.
					if c, ok := prov.(io.Closer); ok {
						_ = c.Close()
					}
					pool.Close()
					return err
				default:
					log.Warn("HostLoomLockUnreachable", zap.String("provider", string(config.ProviderPostgres)),
						zap.String("host", pool.Config().ConnConfig.Host), zap.Uint16("port", pool.Config().ConnConfig.Port),
						zap.String("cause", err.Error()))
					return nil
				}
			}})
		}
		return prov, closeFn, nil
	}
	return lockingfx.NamedProvider{Name: config.ProviderPostgres, Build: build}
}
