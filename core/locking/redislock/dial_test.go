package redislock_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
	"github.com/redis/go-redis/v9"
)

// A client dialling through redislock.Dialer reconnects as soon as a
// restarted server is back, however many dials failed while it was down:
// go-redis' own dialer, once PoolSize dials have failed, fails every dial
// at once until its once-a-second probe succeeds (Q1: a leader must learn
// at once that the restarted server lost its lease).
func TestDialer_Q1_ReconnectsAtOnceAfterManyFailedDials(t *testing.T) {
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Dialer: redislock.Dialer(nil),
		DialTimeout: 3 * time.Second, PoolSize: 4, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	// Many calls while the server is down: with go-redis' dialer they
	// fail enough dials (PoolSize of them) to open its breaker.
	for range 40 {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		if err := c.Ping(cctx).Err(); err == nil {
			t.Fatal("a call succeeded while the server was down")
		}
		cancel()
	}
	if err := s.Relaunch(); err != nil {
		t.Fatal(err)
	}
	// Relaunch returned: the server answers. The next call, with a
	// deadline far below the breaker's one-second probe, gets through.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := c.Ping(cctx).Err(); err != nil {
		t.Fatalf("first call after the server came back: %v", err)
	}
}

// The provider's subscription reports a lost connection at once even over
// a client built with Dialer (go-redis reconnects a subscription inside
// the receive call that met the error; a patient dial there would hold
// EventUnsubscribed back until the server is back), and reports it live
// again once the server is back (Q1: candidates wait for the link while
// it is down).
func TestDialer_Q1_SubscriptionReportsTheLossAtOnce(t *testing.T) {
	s := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Dialer: redislock.Dialer(nil),
		DialTimeout: 5 * time.Second, MaxRetries: -1})
	defer c.Close()
	p := redislock.New(c)
	defer p.Close()
	events := make(chan locking.EventKind, 16)
	stop, err := p.Subscribe("k", func(e locking.Event) {
		select {
		case events <- e.Kind:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	await := func(want locking.EventKind, within time.Duration) {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case k := <-events:
				if k == want {
					return
				}
			case <-deadline:
				t.Fatalf("no event %v within %v", want, within)
			}
		}
	}
	await(locking.EventSubscribed, 5*time.Second)
	s.Kill()
	// Well under DialTimeout, with the server still down.
	await(locking.EventUnsubscribed, 2*time.Second)
	if err := s.Relaunch(); err != nil {
		t.Fatal(err)
	}
	await(locking.EventSubscribed, 5*time.Second)
}

// A server the dialer never reached (a wrong address, a server not
// started) is reported at once, not after the dial's whole timeout: only a
// server seen before is waited for.
func TestDialer_Q1_NeverReachedFailsAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := redislock.Dialer(nil)(ctx, "tcp", addr)
	if err == nil {
		_ = c.Close()
		t.Fatal("dialled a closed port")
	}
	if ctx.Err() != nil {
		t.Fatalf("the dial waited for its context to end: %v", err)
	}
}
