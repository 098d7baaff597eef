package etcdlockbuild

import (
	"context"
	"errors"
	"strings"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
)

var _ lockbuild.Opener = Backend{}

// Open implements lockbuild.Opener: a client built from the section (see
// Build), checked by reading the prefix once within o.Timeout (else
// dial_timeout), which also authenticates it. A refusal of the
// credentials is a *config.FieldError naming locking.etcd.password (or
// locking.etcd.username for a missing permission); any other failure a
// *lockbuild.UnreachableError naming the endpoints. With Client set, Open
// is Build over the app's client, unchecked.
func (b Backend) Open(ctx context.Context, cfg config.LockingConfig, o lockbuild.OpenOptions) (lockbuild.Opened, error) {
	e := SectionOf(cfg)
	timeout, bound := lockbuild.Bound(o, e.DialTimeout, "locking.etcd.dial_timeout")
	if b.Client != nil {
		p, err := b.Build(cfg)
		if err != nil {
			return lockbuild.Opened{}, err
		}
		out := lockbuild.Opened{Provided: p, Timeout: timeout, Target: lockbuild.Target{Addrs: b.Client.Endpoints()}}
		if ep, ok := p.Provider.(*etcdlock.Provider); ok {
			out.JobKeys = ep.JobKeys
		}
		return out, nil
	}
	client, err := e.NewClient(cfg)
	if err != nil {
		return lockbuild.Opened{}, err
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	err = probe(pctx, client, e, cfg)
	cancel()
	if err != nil {
		_ = client.Close()
		var fe *config.FieldError
		if errors.As(err, &fe) {
			return lockbuild.Opened{}, err
		}
		return lockbuild.Opened{}, lockbuild.Unreachable("etcd "+strings.Join(e.Endpoints, ","), timeout, bound, err)
	}
	p, err := etcdlock.New(client, e.ProviderOptions())
	if err != nil {
		_ = client.Close()
		return lockbuild.Opened{}, &config.FieldError{Key: "locking.etcd.prefix", Source: cfg.Source("locking.etcd.prefix"), Reason: err.Error()}
	}
	return lockbuild.Opened{
		Provided: lockbuild.Provided{Provider: p, Close: client.Close},
		Timeout:  timeout,
		Target:   lockbuild.Target{Addrs: e.Endpoints, Username: e.Username, PasswordSet: e.Password.IsSet()},
		JobKeys:  p.JobKeys,
	}, nil
}
