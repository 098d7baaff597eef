// Package locks puts the lock libraries under comparison behind one small
// interface: one acquire+release round trip, and one refused acquire.
// Each adapter uses its library the way the library's documentation shows.
package locks

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	bsm "github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/hostloom/hostloom/core/locking"
	hlredis "github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// TTL is the lease every implementation asks for (rueidislock's default
// KeyValidity).
const TTL = 5 * time.Second

// Locker is one implementation under test.
type Locker interface {
	// Name labels the implementation in the results.
	Name() string
	// RoundTrip acquires key and releases it. It fails when the acquire
	// is refused.
	RoundTrip(ctx context.Context, key string) error
	// Refused makes one acquire attempt on a key someone else holds; it
	// returns an error unless the attempt was refused.
	Refused(ctx context.Context, key string) error
	// Close frees the implementation's resources.
	Close() error
}

var errUnexpected = errors.New("locks: acquire of a held key succeeded")

// Names lists the implementations in table order; the floor first.
var Names = []string{"floor", "hostloom", "redsync", "bsm-redislock", "rueidislock"}

// New builds the named implementation against the Redis at addr. Go-redis
// based ones get their own client with default options. When writes is not
// nil, every write on the implementation's connections adds one to it: a
// request sent, pipelined commands counting once (round trips).
func New(name, addr string, writes *atomic.Int64) (Locker, error) {
	opts := func() *redis.Options { return RedisOptions(addr, writes) }
	switch name {
	case "floor":
		return &Floor{c: redis.NewClient(opts())}, nil
	case "hostloom":
		c := redis.NewClient(opts())
		l, err := hlredis.NewLock(c, locking.DefaultOptions())
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		return &hostloom{c: c, l: l}, nil
	case "redsync":
		c := redis.NewClient(opts())
		return &redsyncLocker{c: c, rs: redsync.New(goredis.NewPool(c))}, nil
	case "bsm-redislock":
		c := redis.NewClient(opts())
		return &bsmLocker{c: c, l: bsm.New(c)}, nil
	case "rueidislock":
		co := rueidis.ClientOption{InitAddress: []string{addr}}
		if writes != nil {
			co.DialCtxFn = func(ctx context.Context, dst string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
				c, err := d.DialContext(ctx, "tcp", dst)
				if err != nil {
					return nil, err
				}
				return &countingConn{Conn: c, writes: writes}, nil
			}
		}
		l, err := rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption:   co,
			KeyMajority:    1,    // one Redis instance, as the README says
			NoLoopTracking: true, // Redis >= 7.0.5, as the README says
			KeyValidity:    TTL,
			// With one key TryNextAfter is only the acquisition's timeout
			// (20 ms by default). The other implementations wait for
			// Redis's answer; with the default, a busy machine made
			// rueidislock give up every acquisition of a run.
			TryNextAfter: TTL,
		})
		if err != nil {
			return nil, err
		}
		return &rueidisLocker{l: l}, nil
	}
	return nil, fmt.Errorf("locks: unknown implementation %q", name)
}

// Floor is the least any Redis lock must do: SET key token NX PX, then a
// compare-and-delete script, over go-redis.
type Floor struct{ c *redis.Client }

var floorRelease = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

func token() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// Name implements Locker.
func (f *Floor) Name() string { return "floor" }

// Acquire takes key with a fresh token.
func (f *Floor) Acquire(ctx context.Context, key string, ttl time.Duration) (string, bool, error) {
	tok, err := token()
	if err != nil {
		return "", false, err
	}
	ok, err := f.c.SetNX(ctx, key, tok, ttl).Result()
	return tok, ok, err
}

// RoundTrip implements Locker.
func (f *Floor) RoundTrip(ctx context.Context, key string) error {
	tok, ok, err := f.Acquire(ctx, key, TTL)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("floor: not acquired")
	}
	n, err := floorRelease.Run(ctx, f.c, []string{key}, tok).Int()
	if err != nil {
		return err
	}
	if n != 1 {
		return errors.New("floor: release refused")
	}
	return nil
}

// Refused implements Locker.
func (f *Floor) Refused(ctx context.Context, key string) error {
	_, ok, err := f.Acquire(ctx, key, TTL)
	if err != nil {
		return err
	}
	if ok {
		return errUnexpected
	}
	return nil
}

// Close implements Locker.
func (f *Floor) Close() error { return f.c.Close() }

type hostloom struct {
	c *redis.Client
	l *locking.DistributedLock
}

func (h *hostloom) Name() string { return "hostloom" }

func (h *hostloom) RoundTrip(ctx context.Context, key string) error {
	lease, err := h.l.TryAcquire(ctx, key, TTL)
	if err != nil {
		return err
	}
	return lease.Release(ctx)
}

func (h *hostloom) Refused(ctx context.Context, key string) error {
	lease, err := h.l.TryAcquire(ctx, key, TTL)
	if err == nil {
		_ = lease.Release(ctx)
		return errUnexpected
	}
	if errors.Is(err, locking.ErrNotAcquired) {
		return nil
	}
	return err
}

// ProviderKey is the Redis key HostLoom uses for key.
func (h *hostloom) ProviderKey(key string) (string, error) { return h.l.ProviderKey(key) }

func (h *hostloom) Close() error {
	_ = h.l.Close()
	return h.c.Close()
}

type redsyncLocker struct {
	c  *redis.Client
	rs *redsync.Redsync
}

func (r *redsyncLocker) Name() string { return "redsync" }

func (r *redsyncLocker) RoundTrip(ctx context.Context, key string) error {
	m := r.rs.NewMutex(key, redsync.WithExpiry(TTL))
	if err := m.TryLockContext(ctx); err != nil {
		return err
	}
	ok, err := m.UnlockContext(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("redsync: unlock refused")
	}
	return nil
}

func (r *redsyncLocker) Refused(ctx context.Context, key string) error {
	m := r.rs.NewMutex(key, redsync.WithExpiry(TTL))
	err := m.TryLockContext(ctx)
	if err == nil {
		_, _ = m.UnlockContext(ctx)
		return errUnexpected
	}
	var taken *redsync.ErrTaken
	var nodeTaken *redsync.ErrNodeTaken
	if errors.As(err, &taken) || errors.As(err, &nodeTaken) || errors.Is(err, redsync.ErrFailed) {
		return nil
	}
	return err
}

func (r *redsyncLocker) Close() error { return r.c.Close() }

type bsmLocker struct {
	c *redis.Client
	l *bsm.Client
}

func (b *bsmLocker) Name() string { return "bsm-redislock" }

func (b *bsmLocker) RoundTrip(ctx context.Context, key string) error {
	lock, err := b.l.Obtain(ctx, key, TTL, nil)
	if err != nil {
		return err
	}
	return lock.Release(ctx)
}

func (b *bsmLocker) Refused(ctx context.Context, key string) error {
	lock, err := b.l.Obtain(ctx, key, TTL, nil)
	if err == nil {
		_ = lock.Release(ctx)
		return errUnexpected
	}
	if errors.Is(err, bsm.ErrNotObtained) {
		return nil
	}
	return err
}

func (b *bsmLocker) Close() error { return b.c.Close() }

type rueidisLocker struct{ l rueidislock.Locker }

func (r *rueidisLocker) Name() string { return "rueidislock" }

func (r *rueidisLocker) RoundTrip(ctx context.Context, key string) error {
	_, cancel, err := r.l.TryWithContext(ctx, key)
	if err != nil {
		return err
	}
	cancel() // releases and waits for the release
	return nil
}

func (r *rueidisLocker) Refused(ctx context.Context, key string) error {
	_, cancel, err := r.l.TryWithContext(ctx, key)
	if err == nil {
		cancel()
		return errUnexpected
	}
	if errors.Is(err, rueidislock.ErrNotLocked) {
		return nil
	}
	return err
}

func (r *rueidisLocker) Close() error { r.l.Close(); return nil }

// HeldKey returns the Redis key an implementation uses for key, so another
// owner can hold it for the refused-acquire measure.
func HeldKey(l Locker, key string) ([]string, error) {
	switch v := l.(type) {
	case *hostloom:
		k, err := v.ProviderKey(key)
		return []string{k}, err
	case *rueidisLocker:
		// rueidislock keys are prefix:i:name; KeyMajority 1 uses one key.
		return []string{"rueidislock:0:" + key}, nil
	}
	return []string{key}, nil
}

// RedisOptions are go-redis's defaults for addr; when writes is not nil,
// every write on the client's connections adds one to it.
func RedisOptions(addr string, writes *atomic.Int64) *redis.Options {
	o := &redis.Options{Addr: addr}
	if writes != nil {
		o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countingConn{Conn: c, writes: writes}, nil
		}
	}
	return o
}

// countingConn counts writes: one per request sent (or pipeline flushed).
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}
