package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking"
)

// env is a connection to the namespace the configuration names: the lock
// the service itself builds from it, opened for one command through the
// backend of locking.provider (lockbuild.Open), whichever it is.
type env struct {
	cfg     *config.Config
	session *lockbuild.Session
	lock    *locking.DistributedLock
	roles   *roleKeys
	timeout time.Duration // bound on each request
	nsFlag  bool          // the namespace came from --namespace
	stderr  io.Writer     // warnings
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

// close releases the subscriptions, the lock and what the backend
// opened (its client or pool).
func (e *env) close() {
	_ = e.session.Close()
}

// open loads the configuration as the service does (the file, then
// HOSTLOOM_* variables), opens the lock through the backend of
// locking.provider (lockbuild.Open: its client or pool, built for one
// command) and checks that the server answers within --timeout, else the
// backend's connect timeout.
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
		return nil, fmt.Errorf("locking.provider is %s (%s): a memory lock lives inside one process; the hostloom CLI needs provider %s", lc.Provider, cfg.Source("locking.provider"), serverProviders(lc))
	}
	roles, err := newRoleKeys(cfg)
	if err != nil {
		return nil, err
	}
	o := lockbuild.OpenOptions{Timeout: g.timeout}
	if g.timeout > 0 {
		o.TimeoutFrom = "--timeout"
	}
	s, err := lockbuild.Open(ctx, lc, o, lockbuild.WithBackends(backends()...))
	if err != nil {
		return nil, err
	}
	return &env{cfg: cfg, session: s, lock: s.Lock, roles: roles, timeout: s.Timeout, nsFlag: g.namespace != "", stderr: sio.err}, nil
}

// serverProviders lists the providers the CLI can open, those with a
// server: every linked backend ("redis, postgres or etcd").
func serverProviders(lc config.LockingConfig) string {
	var names []string
	for _, p := range lc.Providers() {
		if p != config.ProviderMemory && p != config.ProviderDisabled {
			names = append(names, string(p))
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
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
