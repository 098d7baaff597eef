package etcdlockbuild

import (
	"context"
	"errors"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

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
		Notes:    notes{c: client, base: e.Prefix + notesDir},
	}, nil
}

// notesDir holds the notes of lockbuild.Notes under the prefix, apart from
// the provider's own records (etcdlock keeps those under k/, p/, j/, h/
// and s/), so the user's permission on the prefix covers them.
const notesDir = "notes/"

// notes keeps lockbuild.Notes as keys attached to an etcd lease of the
// note's time to live (whole seconds, rounded up).
type notes struct {
	c    *clientv3.Client
	base string
}

func (n notes) SetNote(ctx context.Context, key, value string, ttl time.Duration) error {
	l, err := n.c.Grant(ctx, int64((ttl+time.Second-1)/time.Second))
	if err != nil {
		return err
	}
	_, err = n.c.Put(ctx, n.base+key, value, clientv3.WithLease(l.ID))
	return err
}

func (n notes) Note(ctx context.Context, key string) (string, bool, error) {
	resp, err := n.c.Get(ctx, n.base+key)
	if err != nil || len(resp.Kvs) == 0 {
		return "", false, err
	}
	return string(resp.Kvs[0].Value), true, nil
}

func (n notes) DeleteNote(ctx context.Context, key string) error {
	_, err := n.c.Delete(ctx, n.base+key)
	return err
}
