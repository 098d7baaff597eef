package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/backends/postgres/pglockbuild"
	"github.com/hostloom/hostloom/backends/redis/redislockbuild"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/locking/redislock"
)

// env is a connection to the namespace the configuration names: the
// client, the provider and the lock the service itself builds from it.
// Over provider redis, client and provider are set; over provider
// postgres, pool and pg.
type env struct {
	cfg      *config.Config
	client   redis.UniversalClient
	provider *redislock.Provider
	pool     *pgxpool.Pool
	pg       *pglock.Provider
	lock     *locking.DistributedLock
	roles    *roleKeys
	timeout  time.Duration // bound on each request
	nsFlag   bool          // the namespace came from --namespace
	stderr   io.Writer     // warnings
}

// namespace is the lock namespace, as messages show it.
func (e *env) namespace() string { return e.cfg.Locking.Namespace }

// namespaceRead names the namespace a command read and where that came
// from, for the line a listing that found nothing prints: an empty answer
// over the wrong namespace should say so.
func (e *env) namespaceRead() string {
	src := "--namespace"
	if !e.nsFlag {
		src = "locking.namespace, " + e.cfg.Source("locking.namespace")
	}
	return fmt.Sprintf("namespace %q (%s)", e.namespace(), src)
}

// request returns a context bounded by the request timeout.
func (e *env) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.timeout)
}

// close releases the subscriptions (closing the lock closes its
// provider) and the client.
func (e *env) close() {
	_ = e.lock.Close()
	if e.client != nil {
		_ = e.client.Close()
	}
	if e.pool != nil {
		e.pool.Close()
	}
}

// open loads the configuration as the service does (the file, then
// HOSTLOOM_* variables), builds the Redis client (or the PostgreSQL pool)
// and the lock, and checks that the server answers within the dial
// timeout (the DSN's connect_timeout over PostgreSQL).
func open(ctx context.Context, g *globals, sio stdio) (*env, error) {
	path := g.configPath
	if path == "" {
		path = getenv(sio.environ, configEnv)
	}
	cfg, err := config.Load(path, config.WithEnviron(sio.environ), lockbuild.LoadOption(backends()...))
	if err != nil {
		return nil, fileCause(err)
	}
	if g.namespace != "" {
		// --namespace overrides the configuration's, as kubectl's does the
		// context's: every key the CLI builds is under it.
		cfg.Locking.Namespace = g.namespace
	}
	lc := cfg.Locking
	if path == "" && g.namespace == "" {
		// No file: say what was read, so a namespace with no roles (or the
		// default one, where the service sets another) is not a silent
		// empty answer.
		fmt.Fprintf(sio.err, "hostloom: no config file (-config or %s): namespace %q (locking.namespace: %s)\n",
			configEnv, lc.Namespace, cfg.Source("locking.namespace"))
	}
	switch {
	case !lc.Coordinated():
		return nil, fmt.Errorf("locking.provider is %s (%s): nothing is coordinated, so there is nothing to show", lc.Provider, cfg.Source("locking.provider"))
	case lc.Provider == config.ProviderMemory:
		return nil, fmt.Errorf("locking.provider is %s (%s): a memory lock lives inside one process; the hostloom CLI needs provider redis or postgres", lc.Provider, cfg.Source("locking.provider"))
	case lc.Provider != config.ProviderRedis && lc.Provider != pglockbuild.Name:
		// A linked backend the verbs cannot open yet (etcd): say so
		// instead of reading it as Redis.
		return nil, fmt.Errorf("locking.provider is %s (%s): this version of the hostloom CLI opens providers redis and postgres only", lc.Provider, cfg.Source("locking.provider"))
	}
	roles, err := newRoleKeys(cfg)
	if err != nil {
		return nil, err
	}
	if lc.Provider == pglockbuild.Name {
		return openPostgres(ctx, g, sio, cfg, roles)
	}
	rc := redislockbuild.SectionOf(lc)
	client, err := rc.NewClient()
	if err != nil {
		return nil, err
	}
	timeout := g.timeout
	if timeout <= 0 {
		timeout = rc.DialTimeout
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	err = client.Ping(pctx).Err()
	cancel()
	if err != nil {
		_ = client.Close()
		return nil, unreachable(lc, timeout, g.timeout > 0, err)
	}
	p := redislock.New(client)
	lock, err := locking.New(p, lc.Options())
	if err != nil {
		_ = p.Close()
		_ = client.Close()
		return nil, err
	}
	return &env{cfg: cfg, client: client, provider: p, lock: lock, roles: roles, timeout: timeout, nsFlag: g.namespace != "", stderr: sio.err}, nil
}

// openPostgres is open over provider postgres: a pool from
// locking.postgres.dsn (one connection is enough for one command), checked
// with pglockbuild.Check, which also creates the tables on a fresh database.
func openPostgres(ctx context.Context, g *globals, sio stdio, cfg *config.Config, roles *roleKeys) (*env, error) {
	lc := cfg.Locking
	pc, err := pglockbuild.PoolConfig(lc)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = min(pc.MaxConns, 2)
	timeout := g.timeout
	if timeout <= 0 {
		timeout = pc.ConnConfig.ConnectTimeout
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	pc.ConnConfig.ConnectTimeout = timeout
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	po := pglockbuild.Options(pglockbuild.SectionOf(lc))
	po.AuthAdvice = pglockbuild.DSNAdvice(lc)
	p, err := pglock.New(pool, po)
	if err != nil {
		pool.Close()
		return nil, err
	}
	lock, err := locking.New(p.ForLock(), lc.Options())
	if err != nil {
		_ = p.Close()
		pool.Close()
		return nil, err
	}
	e := &env{cfg: cfg, pool: pool, pg: p, lock: lock, roles: roles, timeout: timeout, nsFlag: g.namespace != "", stderr: sio.err}
	if err := pglockbuild.Check(ctx, pool, p, lc); err != nil {
		e.close()
		var fe *config.FieldError
		if errors.As(err, &fe) {
			return nil, err
		}
		where := fmt.Sprintf("postgres %s:%d", pc.ConnConfig.Host, pc.ConnConfig.Port)
		bound := "the DSN's connect_timeout"
		if g.timeout > 0 {
			bound = "--timeout"
		}
		switch {
		case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
			return nil, fmt.Errorf("%s unreachable: no answer within %v (%s)", where, timeout, bound)
		case errors.Is(err, context.Canceled):
			return nil, fmt.Errorf("%s: interrupted", where)
		case errors.Is(err, syscall.ECONNREFUSED):
			return nil, fmt.Errorf("%s unreachable: connection refused", where)
		}
		return nil, fmt.Errorf("%s unreachable: %s", where, firstLine(err.Error()))
	}
	return e, nil
}

// withEnv opens the namespace (see open), runs fn with it and closes it
// when fn returns: the connection every verb works through.
func withEnv(ctx context.Context, g *globals, sio stdio, fn func(e *env) error) error {
	e, err := open(ctx, g, sio)
	if err != nil {
		return err
	}
	defer e.close()
	return fn(e)
}

// configEnv names the configuration file when --config is not given, as
// it does for the example service.
const configEnv = "HOSTLOOM_CONFIG"

// getenv returns the value of name in environ (KEY=VALUE entries).
func getenv(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// fileCause returns, of config.Load's errors, only the one about the
// file when there is one (missing, unreadable, not YAML): every other
// error then follows from it (a key the file would have set is "not
// set"), and one cause is one line.
func fileCause(err error) error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	for _, e := range joined.Unwrap() {
		var fe *config.FieldError
		if !errors.As(e, &fe) {
			return e
		}
	}
	return err
}

// unreachable words a failed first contact in one line: where, and the
// cause (refused, no answer in time, credentials), never a password. A
// refused authentication is the service's error: the key and where its
// value came from (file or variable).
func unreachable(lc config.LockingConfig, timeout time.Duration, flag bool, err error) error {
	r := redislockbuild.SectionOf(lc)
	where := "redis " + strings.Join(r.Addrs, ",")
	bound := "locking.redis.dial_timeout"
	if flag {
		bound = "--timeout"
	}
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Errorf("%s unreachable: no answer within %v (%s)", where, timeout, bound)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: interrupted", where)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%s unreachable: connection refused", where)
	case redis.IsAuthError(err), strings.HasPrefix(msg, "WRONGPASS"), strings.HasPrefix(msg, "NOAUTH"):
		user := r.Username
		if user == "" {
			user = "default"
		}
		return &config.FieldError{Key: "locking.redis.password", Source: lc.Source("locking.redis.password"),
			Reason: fmt.Sprintf("%s refused the credentials of user %q: %s", where, user, firstLine(msg))}
	}
	return fmt.Errorf("%s unreachable: %s", where, firstLine(msg))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
