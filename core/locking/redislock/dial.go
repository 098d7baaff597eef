package redislock

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// Refused connections are dialled again after refusedFirstWait, the wait
// doubling up to refusedMaxWait, until the dial's context ends.
const (
	refusedFirstWait = time.Millisecond
	refusedMaxWait   = 10 * time.Millisecond
)

// Dialer returns a dial function for go-redis (Options.Dialer, and the
// Dialer of UniversalOptions, ClusterOptions and FailoverOptions) that
// waits out a refused connection, a server restarting, by dialling again
// every few milliseconds (1 ms, doubling up to 10 ms) until the dial's
// context ends (go-redis bounds each dial by DialTimeout), once it has
// connected to that address before: a server it never reached (a wrong
// address, a server not yet started) is reported at once. Other errors,
// and the refusal once the context has ended, are returned as they are.
// tlsConfig, when not nil, is used as go-redis' own dialer uses
// Options.TLSConfig (the server name defaults to the address's host).
//
// Why: go-redis counts failed dials, and once a pool's PoolSize dials have
// failed it fails every dial at once with the last error and probes the
// server once a second until one succeeds. Electors that keep calling a
// restarting server reach that count within moments, so without this
// dialer the client reconnects up to a second after the server is back,
// and a leader learns that late that the server lost its lease (Q1). With
// it a dial fails only after DialTimeout without the server, and the
// first connection is made within about 10 ms of the server's return
// (go-redis probes with it too, so even once its count of failed dials is
// reached, dialling resumes that soon). The provider's subscription dials
// once per attempt, so a lost connection is reported at once.
// The hostloom config (redislockbuild.Config) builds its clients with it;
// pass it when building your own client.
func Dialer(tlsConfig *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{KeepAlive: 5 * time.Minute}
	var seen sync.Map // addresses connected to at least once
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if _, ok := seen.Load(addr); !ok {
			// Never reached: a wrong address or a server not started
			// is reported at once, not after DialTimeout.
			ctx = dialOnce(ctx)
		}
		c, err := dialPatiently(ctx, d, network, addr)
		if err == nil {
			seen.Store(addr, struct{}{})
		}
		if err != nil || tlsConfig == nil {
			return c, err
		}
		cfg := tlsConfig
		if cfg.ServerName == "" {
			host, _, splitErr := net.SplitHostPort(addr)
			if splitErr != nil {
				host = addr
			}
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = c.Close()
			return nil, err
		}
		return tc, nil
	}
}

// onceKey marks a context whose dials Dialer makes once, without waiting
// out a refusal: the subscription's (see dialOnce).
type onceKey struct{}

// dialOnce returns ctx marked so that Dialer dials once: go-redis
// reconnects a subscription inside the receive call that met the error,
// so a patient dial there would hide the lost connection (and keep
// EventUnsubscribed back) until the server is back. The receive loop
// retries on its own (reconnectWait).
func dialOnce(ctx context.Context) context.Context {
	return context.WithValue(ctx, onceKey{}, true)
}

// dialPatiently dials addr, again after a refusal, until ctx ends.
func dialPatiently(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	wait := refusedFirstWait
	for {
		c, err := d.DialContext(ctx, network, addr)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || ctx.Value(onceKey{}) != nil {
			return c, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait = min(2*wait, refusedMaxWait)
	}
}
