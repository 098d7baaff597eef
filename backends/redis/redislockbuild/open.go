package redislockbuild

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild/buildapi"
	"github.com/hostloom/hostloom/core/locking/redislock"
)

// Open implements lockbuild.Opener: a client built from the section for a
// short-lived command, which dials once and retries nothing (so a refused
// connection is reported at once, not after go-redis's retries have used
// up the bound), checked with one PING within o.Timeout (else
// dial_timeout). A refused authentication is a *config.FieldError naming
// locking.redis.password; any other failure an *lockbuild.UnreachableError
// naming the addresses. With Client set, Open is Build: the app's client
// is used as it is, unchecked.
func (b Backend) Open(ctx context.Context, cfg config.LockingConfig, o buildapi.OpenOptions) (buildapi.Opened, error) {
	r := SectionOf(cfg)
	timeout, bound := buildapi.Bound(o, r.DialTimeout, "locking.redis.dial_timeout")
	client := b.Client
	var closeFn func() error
	if client == nil {
		c, err := r.NewClientWith(func(uo *redis.UniversalOptions) {
			uo.MaxRetries = -1   // -1, not 0, disables retries
			uo.DialerRetries = 1 // one dial per connection
			if o.Timeout > 0 {
				uo.DialTimeout = timeout
			}
		})
		if err != nil {
			return buildapi.Opened{}, err
		}
		client, closeFn = c, c.Close
		pctx, cancel := context.WithTimeout(ctx, timeout)
		err = client.Ping(pctx).Err()
		cancel()
		if err != nil {
			_ = c.Close()
			where := "redis " + strings.Join(r.Addrs, ",")
			if redis.IsAuthError(err) {
				user := r.Username
				if user == "" {
					user = "default"
				}
				return buildapi.Opened{}, &config.FieldError{Key: "locking.redis.password", Source: cfg.Source("locking.redis.password"),
					Reason: fmt.Sprintf("%s refused the credentials of user %q: %s", where, user, authReply(err))}
			}
			return buildapi.Opened{}, buildapi.Unreachable(where, timeout, bound, err)
		}
	}
	rp, err := redislock.NewWithOptions(client, r.ProviderOptions())
	if err != nil {
		if closeFn != nil {
			_ = closeFn()
		}
		return buildapi.Opened{}, err
	}
	return buildapi.Opened{
		Provided: buildapi.Provided{Provider: rp, Close: closeFn},
		Timeout:  timeout,
		Target:   buildapi.Target{Addrs: r.Addrs, Username: r.Username, PasswordSet: r.Password.IsSet()},
		JobKeys:  func(ctx context.Context, prefix string) ([]string, error) { return scanKeys(ctx, client, prefix) },
		Notes:    notes{client},
	}, nil
}

// scanKeys lists the keys starting with prefix (SCAN; every master on
// Cluster): the job store keeps one hash per job, under its job key.
func scanKeys(ctx context.Context, c redis.UniversalClient, prefix string) ([]string, error) {
	var mu sync.Mutex // ForEachMaster scans the masters concurrently
	var out []string
	scan := func(ctx context.Context, c redis.Cmdable) error {
		it := c.Scan(ctx, 0, globEscape(prefix)+"*", 256).Iterator()
		for it.Next(ctx) {
			if strings.HasPrefix(it.Val(), prefix) {
				mu.Lock()
				out = append(out, it.Val())
				mu.Unlock()
			}
		}
		return it.Err()
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return scan(ctx, m) })
	} else {
		err = scan(ctx, c)
	}
	return out, err
}

// globEscape quotes the glob metacharacters of a SCAN pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// notes keeps buildapi.Notes as plain keys with a TTL.
type notes struct{ c redis.UniversalClient }

func (n notes) SetNote(ctx context.Context, key, value string, ttl time.Duration) error {
	return n.c.Set(ctx, key, value, ttl).Err()
}

func (n notes) Note(ctx context.Context, key string) (string, bool, error) {
	v, err := n.c.Get(ctx, key).Result()
	if err == redis.Nil {
		return "", false, nil
	}
	return v, err == nil, err
}

func (n notes) DeleteNote(ctx context.Context, key string) error {
	return n.c.Del(ctx, key).Err()
}
