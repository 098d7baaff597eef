package redislock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

func acquireReq(key, value string) locking.AcquireRequest {
	return locking.AcquireRequest{Key: key, Value: value, TTL: 5 * time.Second, Owner: "o", ParticipantTTL: 10 * time.Second}
}

// TestReplicas_Q2_AcquireAndExtendCountOnlyWhenAcknowledged: with
// MinReplicas 1 over a primary and its replica, acquisitions and
// extensions succeed while the replica keeps up; while it is stopped
// (SIGSTOP) an acquisition is refused with an AckError and taken back on
// the primary, and an extension is reported as not acknowledged. Without
// the option the same acquisition succeeds at once.
func TestReplicas_Q2_AcquireAndExtendCountOnlyWhenAcknowledged(t *testing.T) {
	primary, replica := redistest.StartReplicated(t)
	ctx := context.Background()
	pc := primary.Client(t)
	// The acknowledgement timeout bounds the wait; WAIT answers as soon as
	// the replica has the write. 200ms was too short for the acknowledged
	// calls on a busy machine (the replica is a process of its own that
	// must be scheduled to apply and acknowledge), so it is generous; the
	// calls made while the replica is stopped each wait it out once.
	p := mustProvider(t, pc, redislock.Options{MinReplicas: 1, ReplicaAckTimeout: 2 * time.Second})
	plain := redislock.New(primary.Client(t))
	defer p.Close()
	defer plain.Close()
	if n, err := p.ReplicasConnected(ctx, "k1"); err != nil || n != 1 {
		t.Fatalf("ReplicasConnected = %d, %v; want 1", n, err)
	}
	r, err := p.Acquire(ctx, acquireReq("k1", "v1"))
	if err != nil || !r.Acquired {
		t.Fatalf("acknowledged acquisition: %+v %v", r, err)
	}
	if v, err := replica.Client(t).Get(ctx, "k1").Result(); err != nil || v != "v1" {
		t.Fatalf("replica has k1 = %q %v; WAIT returned before it had it", v, err)
	}
	if r, err := p.Extend(ctx, locking.ExtendRequest{Key: "k1", Value: "v1", TTL: 5 * time.Second}); err != nil || !r.Extended {
		t.Fatalf("acknowledged extension: %v %v", r.Extended, err)
	}

	if err := replica.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = replica.Signal(syscall.SIGCONT) }()
	_, err = p.Acquire(ctx, acquireReq("k2", "v2"))
	var ack *redislock.AckError
	if !errors.Is(err, redislock.ErrNotAcknowledged) || !errors.As(err, &ack) || ack.Want != 1 || ack.Got != 0 || ack.Op != "acquire" {
		t.Fatalf("acquisition with the replica stopped: %v, want an AckError 0 of 1", err)
	}
	if n, err := pc.Exists(ctx, "k2").Result(); err != nil || n != 0 {
		t.Fatalf("the unacknowledged acquisition is still on the primary: %d %v", n, err)
	}
	if _, err := p.Extend(ctx, locking.ExtendRequest{Key: "k1", Value: "v1", TTL: 5 * time.Second}); !errors.Is(err, redislock.ErrNotAcknowledged) {
		t.Fatalf("extension with the replica stopped: %v, want not acknowledged", err)
	}
	// A refusal needs no acknowledgement.
	if r, err := p.Acquire(ctx, acquireReq("k1", "other")); err != nil || r.Acquired || r.HolderValue != "v1" {
		t.Fatalf("refusal with the replica stopped: %+v %v", r, err)
	}
	// Without the option the primary alone grants it.
	if r, err := plain.Acquire(ctx, acquireReq("k3", "v3")); err != nil || !r.Acquired {
		t.Fatalf("without min replicas: %+v %v", r, err)
	}

	if err := replica.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := p.Acquire(ctx, acquireReq("k2", "v2"))
		if err == nil && r.Acquired {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no acknowledged acquisition after the replica resumed: %+v %v", r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReplicas_Q2_MoreThanTheServerHasIsNeverAcknowledged: a standalone
// server has no replica; MinReplicas 1 can never be met, and the provider
// says how many it has.
func TestReplicas_Q2_MoreThanTheServerHasIsNeverAcknowledged(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	p := mustProvider(t, srv.Client(t), redislock.Options{MinReplicas: 1, ReplicaAckTimeout: 20 * time.Millisecond})
	defer p.Close()
	if n, err := p.ReplicasConnected(ctx, "k"); err != nil || n != 0 {
		t.Fatalf("ReplicasConnected = %d, %v; want 0", n, err)
	}
	if _, err := p.Acquire(ctx, acquireReq("k", "v")); !errors.Is(err, redislock.ErrNotAcknowledged) {
		t.Fatalf("Acquire = %v, want not acknowledged", err)
	}
}

// TestReplicas_Q2_BadOptions: negative values are errors naming the field
// and the value.
func TestReplicas_Q2_BadOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, o := range []redislock.Options{{MinReplicas: -1}, {ReplicaAckTimeout: -time.Second}} {
		_, err := redislock.NewWithOptions(c, o)
		if err == nil || (!strings.Contains(err.Error(), "MinReplicas -1") && !strings.Contains(err.Error(), "ReplicaAckTimeout -1s")) {
			t.Fatalf("NewWithOptions(%+v) = %v, want an error naming the field and value", o, err)
		}
	}
}

// BenchmarkReplicaAck_Q2 measures an acquisition (acquire + release) and a
// renewal over a primary with one replica, with and without MinReplicas 1
// (the WAIT in the same round trip).
func BenchmarkReplicaAck_Q2(b *testing.B) {
	primary, replica := redistest.Start(b), redistest.Start(b)
	ctx := context.Background()
	host, port, _ := strings.Cut(primary.Addr(), ":")
	rc := replica.Client(b)
	if err := rc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		b.Fatal(err)
	}
	for {
		if info, _ := rc.Info(ctx, "replication").Result(); strings.Contains(info, "master_link_status:up") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, min := range []int{0, 1} {
		p, err := redislock.NewWithOptions(primary.Client(b), redislock.Options{MinReplicas: min, ReplicaAckTimeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		name := "min_replicas=" + strconv.Itoa(min)
		b.Run(name+"/acquire", func(b *testing.B) {
			for b.Loop() {
				r, err := p.Acquire(ctx, acquireReq("bench", "v"))
				if err != nil || !r.Acquired {
					b.Fatalf("%+v %v", r, err)
				}
				if _, err := p.Release(ctx, locking.ReleaseRequest{Key: "bench", Value: "v"}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/renew", func(b *testing.B) {
			if r, err := p.Acquire(ctx, acquireReq("bench-renew"+name, "v")); err != nil || !r.Acquired {
				b.Fatalf("%+v %v", r, err)
			}
			for b.Loop() {
				if r, err := p.Extend(ctx, locking.ExtendRequest{Key: "bench-renew" + name, Value: "v", TTL: 5 * time.Second}); err != nil || !r.Extended {
					b.Fatalf("%v %v", r.Extended, err)
				}
			}
			// -count runs this again: the key must be free then.
			if _, err := p.Release(ctx, locking.ReleaseRequest{Key: "bench-renew" + name, Value: "v"}); err != nil {
				b.Fatal(err)
			}
		})
		_ = p.Close()
	}
}
