package etcdlockbuild

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
)

// Backend is provider etcd as a lockbuild.Backend (and config.Backend):
// the section locking.etcd (Config) and a builder over a client built from
// it, or over Client. Its zero value builds its own client and logs
// nothing.
type Backend struct {
	// Client, when not nil, is used instead of a client built from
	// locking.etcd; the caller keeps closing it (there is no start check
	// for it). Default nil.
	Client *clientv3.Client
	// Logger, when not nil, receives the start check's findings. Default
	// nil: nothing is logged.
	Logger *zap.Logger
}

var _ lockbuild.Backend = Backend{}

// Provider returns Name, "etcd".
func (Backend) Provider() config.ProviderName { return Name }

// Section returns the defaults of locking.etcd, for config.Load to decode
// into.
func (Backend) Section() config.Section {
	d := Defaults()
	return &d
}

// Build makes the etcdlock provider over b.Client or a client built from
// the section (closed by Provided.Close). The client connects in the
// background and, with a username, authenticates on its first request,
// so an unreachable cluster does not fail start: nobody leads until it
// answers. A TLS file that cannot be read fails start naming its key and
// path.
//
// The start check (Provided.Check) of a client it built reads the
// prefix once, within dial_timeout: a refusal of the credentials or a
// permission is a *config.FieldError, logged once at Error
// (HostLoomLockAuthFailed, with the user, never the password): wrong
// credentials fail start naming locking.etcd.password. Any other failure
// is an outage, logged once at Warn (HostLoomLockUnreachable).
func (b Backend) Build(cfg config.LockingConfig) (lockbuild.Provided, error) {
	e := SectionOf(cfg)
	log := b.Logger
	if log == nil {
		log = zap.NewNop()
	}
	client := b.Client
	var closeFn func() error
	if client == nil {
		c, err := e.NewClient(cfg)
		if err != nil {
			return lockbuild.Provided{}, err
		}
		client, closeFn = c, c.Close
	}
	p, err := etcdlock.New(client, e.ProviderOptions())
	if err != nil {
		if closeFn != nil {
			_ = closeFn()
		}
		return lockbuild.Provided{}, &config.FieldError{Key: "locking.etcd.prefix", Source: cfg.Source("locking.etcd.prefix"), Reason: err.Error()}
	}
	fields := []zap.Field{zap.Bool("app_client", b.Client != nil)}
	if b.Client == nil {
		fields = append(fields, zap.Object("etcd", e))
	}
	out := lockbuild.Provided{Provider: p, Close: closeFn, LogFields: fields}
	if b.Client == nil {
		out.Check = func(ctx context.Context, _ *locking.DistributedLock) error {
			return check(ctx, client, e, cfg, log)
		}
	}
	return out, nil
}

// NewClient returns the etcd client the section describes. Errors are
// *config.FieldError values naming the key.
func (e Config) NewClient(cfg config.LockingConfig) (*clientv3.Client, error) {
	var errs []error
	for _, fe := range e.Validate(cfg.SectionKeys(Name)) {
		errs = append(errs, fe)
	}
	if len(e.Endpoints) == 0 {
		errs = append(errs, &config.FieldError{Key: "locking.etcd.endpoints", Source: cfg.Source("locking.etcd.endpoints"),
			Reason: "provider etcd needs at least one host:port address (or a *clientv3.Client from the app)"})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	tc, err := e.TLS.ClientConfig(cfg)
	if err != nil {
		return nil, err
	}
	cc := clientv3.Config{Endpoints: e.Endpoints, TLS: tc, Logger: zap.NewNop()}
	if e.Username != "" {
		// Given a username, etcd's client authenticates while it is
		// built, so an unreachable cluster would fail start. Built with a
		// placeholder token instead, it sets up its per-request
		// credentials without a request; once it has the username and
		// password in place of the token, its first request is refused
		// (invalid token) and the client authenticates with them and
		// retries it, as it does when a token expires: authentication
		// happens on first use, and wrong credentials are an error of that
		// use (the start check's).
		cc.Token = deferredToken
	}
	c, err := clientv3.New(cc)
	if err != nil {
		return nil, &config.FieldError{Key: "locking.etcd.endpoints", Source: cfg.Source("locking.etcd.endpoints"),
			Reason: fmt.Sprintf("cannot build the etcd client: %v", err)}
	}
	if e.Username != "" {
		// Before any request: nothing reads these fields yet.
		c.Token, c.Username, c.Password = "", e.Username, e.Password.Value()
	}
	return c, nil
}

// deferredToken is the placeholder token NewClient builds a client with
// when it has a username: no server issues it.
const deferredToken = "hostloom-authenticate-on-first-use"

// isAuthError reports a refusal of the credentials or a permission.
func isAuthError(err error) bool {
	for _, e := range []error{rpctypes.ErrAuthFailed, rpctypes.ErrPermissionDenied, rpctypes.ErrUserEmpty,
		rpctypes.ErrUserNotFound, rpctypes.ErrInvalidAuthToken, rpctypes.ErrAuthOldRevision} {
		if errors.Is(err, e) {
			return true
		}
	}
	return errors.Is(err, locking.ErrUnauthorized)
}

// check reads the prefix once through the client Build built, within
// dial_timeout, and logs what it finds.
func check(ctx context.Context, c *clientv3.Client, e Config, cfg config.LockingConfig, log *zap.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, e.DialTimeout)
	defer cancel()
	err := probe(ctx, c, e, cfg)
	var fe *config.FieldError
	switch {
	case err == nil:
	case errors.As(err, &fe):
		log.Error("HostLoomLockAuthFailed", zap.String("user", e.Username), zap.Strings("endpoints", e.Endpoints),
			zap.String("key", fe.Key), zap.String("source", fe.Source), zap.String("reason", fe.Reason))
	default:
		log.Warn("HostLoomLockUnreachable", zap.Strings("endpoints", e.Endpoints), zap.Error(err))
	}
	return err
}

// probe reads the prefix once (a count, no values): the client's first
// request, which also authenticates it. A refusal of the credentials or
// of a permission is a *config.FieldError naming the key; any other
// error is returned as it is.
func probe(ctx context.Context, c *clientv3.Client, e Config, cfg config.LockingConfig) error {
	_, err := c.Get(ctx, e.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err == nil || !isAuthError(err) {
		return err
	}
	key := "locking.etcd.password"
	reason := fmt.Sprintf("etcd refused the credentials of user %q: %v", e.Username, err)
	if errors.Is(err, rpctypes.ErrPermissionDenied) {
		key = "locking.etcd.username"
		reason = fmt.Sprintf("user %q may not read the prefix %q: grant its role read and write on it (etcdctl role grant-permission --prefix)", e.Username, e.Prefix)
	}
	return &config.FieldError{Key: key, Source: cfg.Source(key), Reason: reason}
}
