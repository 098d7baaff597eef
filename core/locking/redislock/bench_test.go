package redislock_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// The baselines are what a careful user would write with go-redis alone:
// SET NX PX with a random token, and compare-and-delete /
// compare-and-pexpire in Lua (the simplest correct forms).
var (
	baselineDel = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	baselineExt = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`)
)

func token(b *testing.B) string {
	var t [16]byte
	if _, err := rand.Read(t[:]); err != nil {
		b.Fatal(err)
	}
	return hex.EncodeToString(t[:])
}

// benchSetup starts a server and returns a client, a provider and a lock
// over it.
func benchSetup(b *testing.B) (*redis.Client, *redislock.Provider, *locking.DistributedLock) {
	b.Helper()
	s := redistest.Start(b)
	c := s.Client(b)
	p := redislock.New(c)
	b.Cleanup(func() { _ = p.Close() })
	o := locking.DefaultOptions()
	o.Namespace = "bench"
	l, err := locking.New(p, o)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// Load the scripts so no iteration pays for NOSCRIPT.
	for _, s := range []*redis.Script{baselineDel, baselineExt} {
		if err := s.Load(ctx, c).Err(); err != nil {
			b.Fatal(err)
		}
	}
	ls, err := l.TryAcquire(ctx, "warm", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	if err := ls.Extend(ctx, time.Minute); err != nil {
		b.Fatal(err)
	}
	if err := ls.Release(ctx); err != nil {
		b.Fatal(err)
	}
	return c, p, l
}

// serverTime returns the server's total command time (INFO commandstats),
// the part of a round trip that network and scheduling noise on the client
// machine do not distort.
func serverTime(b *testing.B, c *redis.Client) time.Duration {
	b.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		_, rest, ok := strings.Cut(line, ",usec=")
		if !ok || !strings.HasPrefix(line, "cmdstat_") || strings.HasPrefix(line, "cmdstat_info:") {
			continue
		}
		usec, _, _ := strings.Cut(rest, ",")
		n, err := strconv.ParseInt(usec, 10, 64)
		if err != nil {
			b.Fatalf("commandstats line %q: %v", line, err)
		}
		total += n
	}
	return time.Duration(total) * time.Microsecond
}

// measure runs body b.N times and reports the server's command time per
// operation as srv-ns/op beside the usual figures.
func measure(b *testing.B, c *redis.Client, body func()) {
	b.Helper()
	b.ReportAllocs()
	before := serverTime(b, c)
	n := 0
	for b.Loop() {
		body()
		n++
	}
	b.ReportMetric(float64(serverTime(b, c)-before)/float64(n), "srv-ns/op")
}

func BenchmarkTryAcquireRelease(b *testing.B) {
	c, p, l := benchSetup(b)
	ctx := context.Background()
	b.Run("baseline", func(b *testing.B) {
		measure(b, c, func() {
			tok := token(b)
			ok, err := c.SetNX(ctx, "bench:lock:job", tok, time.Minute).Result()
			if err != nil || !ok {
				b.Fatalf("SET NX = %v, %v", ok, err)
			}
			if n, err := baselineDel.Run(ctx, c, []string{"bench:lock:job"}, tok).Int(); err != nil || n != 1 {
				b.Fatalf("compare-and-delete = %v, %v", n, err)
			}
		})
	})
	b.Run("provider", func(b *testing.B) {
		measure(b, c, func() {
			tok := token(b)
			if ok, _, err := acquireRaw(p, ctx, "bench:lock:job", tok, time.Minute); err != nil || !ok {
				b.Fatalf("Acquire = %v, %v", ok, err)
			}
			if ok, err := releaseRaw(p, ctx, "bench:lock:job", tok); err != nil || !ok {
				b.Fatalf("Release = %v, %v", ok, err)
			}
		})
	})
	b.Run("lock", func(b *testing.B) {
		measure(b, c, func() {
			ls, err := l.TryAcquire(ctx, "job", time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			if err := ls.Release(ctx); err != nil {
				b.Fatal(err)
			}
		})
	})
}

func BenchmarkExtend(b *testing.B) {
	c, p, l := benchSetup(b)
	ctx := context.Background()
	ls, err := l.TryAcquire(ctx, "job", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	tok := token(b)
	if err := c.Set(ctx, "bench:lock:raw", tok, time.Minute).Err(); err != nil {
		b.Fatal(err)
	}
	b.Run("baseline", func(b *testing.B) {
		measure(b, c, func() {
			if n, err := baselineExt.Run(ctx, c, []string{"bench:lock:raw"}, tok, int64(60000)).Int(); err != nil || n != 1 {
				b.Fatalf("compare-and-pexpire = %v, %v", n, err)
			}
		})
	})
	b.Run("provider", func(b *testing.B) {
		measure(b, c, func() {
			if ok, err := extendRaw(p, ctx, "bench:lock:raw", tok, time.Minute); err != nil || !ok {
				b.Fatalf("Extend = %v, %v", ok, err)
			}
		})
	})
	b.Run("lock", func(b *testing.B) {
		measure(b, c, func() {
			if err := ls.Extend(ctx, time.Minute); err != nil {
				b.Fatal(err)
			}
		})
	})
}

func BenchmarkRefusedAcquire(b *testing.B) {
	c, p, l := benchSetup(b)
	ctx := context.Background()
	if _, err := l.TryAcquire(ctx, "job", time.Hour); err != nil {
		b.Fatal(err)
	}
	tok := token(b)
	b.Run("baseline", func(b *testing.B) {
		measure(b, c, func() {
			if ok, err := c.SetNX(ctx, "bench:lock:job", tok, time.Minute).Result(); err != nil || ok {
				b.Fatalf("SET NX = %v, %v; want refused", ok, err)
			}
		})
	})
	b.Run("provider", func(b *testing.B) {
		measure(b, c, func() {
			if ok, rem, err := acquireRaw(p, ctx, "bench:lock:job", tok, time.Minute); err != nil || ok || rem <= 0 {
				b.Fatalf("Acquire = %v, %v, %v; want refused with the holder's TTL", ok, rem, err)
			}
		})
	})
	b.Run("lock", func(b *testing.B) {
		var held *locking.HeldError
		measure(b, c, func() {
			if _, err := l.TryAcquire(ctx, "job", time.Minute); !errors.As(err, &held) {
				b.Fatalf("TryAcquire = %v, want *HeldError", err)
			}
		})
	})
}
