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

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
)

// env is a connection to the namespace the configuration names: the
// client, the provider and the lock the service itself builds from it.
type env struct {
	cfg      *config.Config
	client   redis.UniversalClient
	provider *redislock.Provider
	lock     *locking.DistributedLock
	roles    *roleKeys
	timeout  time.Duration // bound on each request
	stderr   io.Writer     // warnings
}

// namespace is the lock namespace, as messages show it.
func (e *env) namespace() string { return e.cfg.Locking.Namespace }

// request returns a context bounded by the request timeout.
func (e *env) request(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.timeout)
}

// close releases the subscriptions (closing the lock closes its
// provider) and the client.
func (e *env) close() {
	_ = e.lock.Close()
	_ = e.client.Close()
}

// open loads the configuration as the service does (the file, then
// HOSTLOOM_* variables), builds the Redis client and the lock, and checks
// that Redis answers within the dial timeout.
func open(ctx context.Context, g *globals, sio stdio) (*env, error) {
	path := g.configPath
	if path == "" {
		path = getenv(sio.environ, configEnv)
	}
	cfg, err := config.Load(path, config.WithEnviron(sio.environ))
	if err != nil {
		return nil, err
	}
	lc := cfg.Locking
	switch {
	case !lc.Coordinated():
		return nil, fmt.Errorf("locking.provider is %s (%s): nothing is coordinated, so there is nothing to show", lc.Provider, cfg.Source("locking.provider"))
	case lc.Provider != config.ProviderRedis:
		return nil, fmt.Errorf("locking.provider is %s (%s): a memory lock lives inside one process; the hostloom CLI needs provider redis", lc.Provider, cfg.Source("locking.provider"))
	}
	roles, err := newRoleKeys(cfg)
	if err != nil {
		return nil, err
	}
	client, err := lc.Redis.NewClient()
	if err != nil {
		return nil, err
	}
	timeout := g.timeout
	if timeout <= 0 {
		timeout = lc.Redis.DialTimeout
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	err = client.Ping(pctx).Err()
	cancel()
	if err != nil {
		_ = client.Close()
		return nil, unreachable(lc.Redis, timeout, g.timeout > 0, err)
	}
	p := redislock.New(client)
	lock, err := locking.New(p, lc.Options())
	if err != nil {
		_ = p.Close()
		_ = client.Close()
		return nil, err
	}
	return &env{cfg: cfg, client: client, provider: p, lock: lock, roles: roles, timeout: timeout, stderr: sio.err}, nil
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

// unreachable words a failed first contact in one line: where, and the
// cause (refused, no answer in time, credentials), never a password.
func unreachable(r config.RedisConfig, timeout time.Duration, flag bool, err error) error {
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
	case strings.HasPrefix(msg, "WRONGPASS"), strings.HasPrefix(msg, "NOAUTH"), strings.Contains(msg, "AUTH"):
		user := r.Username
		if user == "" {
			user = "default"
		}
		return fmt.Errorf("%s refused the credentials of user %q (locking.redis.username, locking.redis.password): %s", where, user, firstLine(msg))
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
