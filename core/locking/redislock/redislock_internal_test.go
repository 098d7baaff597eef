package redislock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
)

func TestMayHaveRun_OnlyWhenTheOutcomeIsUnknown(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"reply lost to an ended context", fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{"read timeout", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, true},
		{"connection reset", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, true},
		{"dial refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, false},
		{"client closed", redis.ErrClosed, false},
		{"pool timeout", redis.ErrPoolTimeout, false},
		{"server error reply", serverError("ERR something"), false},
		{"queued until its context ended", fmt.Errorf("%w: %w", context.DeadlineExceeded, errNotSent), false},
		{"queued until its context ended while the server answered others", fmt.Errorf("%w: %w", context.DeadlineExceeded, locking.ErrNotSent), false},
	} {
		if got := mayHaveRun(c.err); got != c.want {
			t.Errorf("%s: mayHaveRun(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// serverError is an error reply from Redis (go-redis' redis.Error).
type serverError string

func (e serverError) Error() string { return string(e) }
func (serverError) RedisError()     {}

// earlyDeadline is a context whose deadline has passed while its own timer
// has not fired yet (Err is still nil): the moment in which a connection's
// read deadline can already have expired.
type earlyDeadline struct{ context.Context }

func (earlyDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestOpError_Issue14_EndedContextWrappedWhateverTheTransportSays(t *testing.T) {
	ctx := earlyDeadline{context.Background()}
	if ctx.Err() != nil {
		t.Fatal("the test context must not report its end yet")
	}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	err := opError("acquire", ctx, timeout)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("opError = %v; want it to wrap context.DeadlineExceeded and the transport's error", err)
	}
	// A live context leaves the transport's error alone.
	live, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := opError("acquire", live, timeout); errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("opError with a live context = %v; must not claim the context ended", err)
	}
	// A cancelled context is wrapped once.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if err := opError("extend", cctx, context.Canceled); err.Error() != "redislock: extend: context canceled" {
		t.Fatalf("opError = %q", err)
	}
}

func TestSlotTag_EverySlotHasAShortTagWithoutBraces(t *testing.T) {
	for slot := range slots {
		tag := slotTag(slot)
		if tag == "" || len(tag) > 4 || strings.ContainsAny(tag, "{}") {
			t.Fatalf("slotTag(%d) = %q", slot, tag)
		}
		if got := keySlot(tag); got != slot {
			t.Fatalf("keySlot(slotTag(%d) = %q) = %d", slot, tag, got)
		}
	}
}

func TestMetaKey_G1_SameSlotAndReversible(t *testing.T) {
	keys := []string{"ns:lock:job", "{billing}:lock:job", "ns:lock:{x}y", "ns:lock:a}b", "ns:lock:}{",
		"{ns:lock:Q}:meta", "ns:lock:Q}:meta:ns:lock:{ns:lock:Q", "a{b:lock:c}d", "ключ", "x"}
	seen := map[string]string{}
	for _, k := range keys {
		m := metaKey(k)
		if keySlot(m) != keySlot(k) {
			t.Errorf("metaKey(%q) = %q is in slot %d, the key in %d", k, m, keySlot(m), keySlot(k))
		}
		if back, ok := lockKeyOf(m); !ok || back != k {
			t.Errorf("lockKeyOf(%q) = %q, %v; want %q", m, back, ok, k)
		}
		if other, dup := seen[m]; dup {
			t.Errorf("%q and %q share the meta key %q", other, k, m)
		}
		seen[m] = k
	}
}
