package main

import (
	"os"
	"strings"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/backends/etcd/etcdlockfx"
	"github.com/hostloom/hostloom/backends/postgres/pglockfx"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/dashboardfx"
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

// backends are the lock backends the example plugs in: locking.provider
// may be postgres (the pool from locking.postgres.dsn, or the app's own
// *pgxpool.Pool) or etcd (a client from locking.etcd.*, or the app's own
// *clientv3.Client), besides redis (the library module's own backend,
// linked by default: locking.redis.*, or the app's own
// redis.UniversalClient), memory and disabled. A backend of another module
// is added here.
var backends = fx.Options(
	pglockfx.Module,
	etcdlockfx.Module,
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
		backends,
		leadershipfx.Module, // *Roles and *Health
		schedulingfx.Module,
		schedulingfx.JobFunc(roleBilling, newInvoicesJob),
		fx.Provide(newInventory),
		// The operators' view, mounted by the HTTP server at /dashboard/;
		// read-only unless HOSTLOOM_DASHBOARD_CREDENTIAL is set.
		dashboardfx.Module,
		fx.Supply(dashboardfx.Settings{Title: "HostLoom example", Credential: s.getenv(dashboardCredentialEnv)}),
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

// dashboardCredentialEnv names the variable holding the operators'
// credential of the dashboard (never a flag: command lines are visible to
// every user of the machine).
const dashboardCredentialEnv = "HOSTLOOM_DASHBOARD_CREDENTIAL"

// getenv reads name from the settings' environment, or the process's.
func (s settings) getenv(name string) string {
	if s.environ == nil {
		return os.Getenv(name)
	}
	for _, kv := range s.environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
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
	// The backend's section, which logs itself with its secrets redacted.
	if s, ok := p.Config.Locking.Section(p.Config.Locking.Provider).(zapcore.ObjectMarshaler); ok {
		fields = append(fields, zap.Object(string(p.Config.Locking.Provider), s))
	}
	p.Log.Info("HostLoomExample", fields...)
}
