package main

import (
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/core/locking/pglock/pglockfx"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
	"github.com/hostloom/hostloom/schedulingfx"
)

// Roles of the example.
const (
	// roleBilling runs the scheduled invoices job.
	roleBilling = "billing"
	// roleInventory gates the inventory-changes channel.
	roleInventory = "inventory"
)

// newApp assembles the service: configuration, lock, two roles, a job on
// billing, a leader channel on inventory, HTTP and metrics.
func newApp(s settings, log *zap.Logger) *fx.App {
	return fx.New(graph(s, log))
}

func graph(s settings, log *zap.Logger) fx.Option {
	cfgOpts := []config.LoadOption{config.WithYAML("embedded config.yaml", embeddedConfig)}
	if s.environ != nil {
		cfgOpts = append(cfgOpts, config.WithEnviron(s.environ))
	}
	return fx.Options(
		fx.Supply(log, listenAddr(s.httpAddr)),
		leadershipfx.ZapEventLogger(),
		configfx.Module(s.configPath, cfgOpts...),
		fx.Provide(newMetrics),
		lockingfx.Module,
		// locking.provider postgres: the pool from locking.postgres.dsn.
		pglockfx.Module,
		leadershipfx.Module, // *Roles and *Health
		schedulingfx.Module,
		schedulingfx.JobFunc(roleBilling, newInvoicesJob),
		fx.Provide(newInventory),
		fx.Provide(newHTTPServer),
		fx.Invoke(logStartup, func(*inventory, *httpServer) {}),
		// Last: each role starts from its own hook, in fx's order, so the
		// roles contend after every OnStart hook above succeeded (a busy
		// HTTP port fails the start before any election); at shutdown they
		// leave first, all at once.
		leadershipfx.Role(roleBilling),
		leadershipfx.Role(roleInventory),
	)
}

type startupParams struct {
	fx.In

	Config *config.Config
	Health *leadershipfx.Health
	Log    *zap.Logger
}

// logStartup logs what the service runs with (the Redis password and
// the PostgreSQL DSN redacted).
func logStartup(p startupParams) {
	roles := make([]string, 0, 2)
	for _, e := range p.Health.Electors() {
		roles = append(roles, e.Role())
	}
	fields := []zap.Field{
		zap.String("provider", string(p.Config.Locking.Provider)),
		zap.String("namespace", p.Config.Locking.Namespace),
		zap.Strings("roles", roles),
		zap.Duration("lease", p.Config.Leadership.Lease),
	}
	if p.Config.Locking.Provider == config.ProviderRedis {
		fields = append(fields, zap.Object("redis", p.Config.Locking.Redis))
	}
	if p.Config.Locking.Provider == config.ProviderPostgres {
		fields = append(fields, zap.Object("postgres", p.Config.Locking.Postgres))
	}
	p.Log.Info("HostLoomExample", fields...)
}
