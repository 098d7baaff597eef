package locks_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"

	"github.com/hostloom/hostloom/bench/internal/locks"
	"github.com/hostloom/hostloom/bench/internal/redisproc"
	"github.com/redis/go-redis/v9"
)

var addr string

func TestMain(m *testing.M) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		fmt.Println("redis-server not installed: skipping")
		os.Exit(m.Run())
	}
	s, err := redisproc.Start("redis-server")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	addr = s.Addr()
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

func newLocker(tb testing.TB, name string, writes *atomic.Int64) locks.Locker {
	tb.Helper()
	if addr == "" {
		tb.Skip("redis-server not installed")
	}
	l, err := locks.New(name, addr, writes)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	return l
}

// TestLockers checks every adapter: a round trip succeeds and leaves the key
// free, and an attempt on a key someone else holds is refused without
// touching that key.
func TestLockers(t *testing.T) {
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	for _, name := range locks.Names {
		t.Run(name, func(t *testing.T) {
			var writes atomic.Int64
			l := newLocker(t, name, &writes)
			if l.Name() != name {
				t.Fatalf("Name() = %q", l.Name())
			}
			for range 3 {
				if err := l.RoundTrip(ctx, "test:rt:"+name); err != nil {
					t.Fatalf("RoundTrip: %v", err)
				}
			}
			key := "test:held:" + name
			held, err := locks.HeldKey(l, key)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range held {
				if err := admin.Set(ctx, k, "other", 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Refused(ctx, key); err != nil {
				t.Fatalf("Refused: %v", err)
			}
			for _, k := range held {
				if v, err := admin.Get(ctx, k).Result(); err != nil || v != "other" {
					t.Fatalf("held key %q now %q, %v", k, v, err)
				}
			}
			if writes.Load() == 0 {
				t.Fatal("no request counted on the adapter's connections")
			}
		})
	}
}

// BenchmarkRoundTrip is the lock round trip of every implementation, for
// benchstat; cmd/hlbench reports the same with latency percentiles.
func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	for _, name := range locks.Names {
		b.Run(name, func(b *testing.B) {
			l := newLocker(b, name, nil)
			b.ReportAllocs()
			for b.Loop() {
				if err := l.RoundTrip(ctx, "bench:rt:"+name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
