package lockbuild_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// checkedBackend is a backend without Opener whose start check returns
// check's error: Open falls back to Build and the check.
type checkedBackend struct {
	check  error
	closed *int
}

func (checkedBackend) Provider() config.ProviderName { return "checked" }
func (checkedBackend) Section() config.Section       { return nil }
func (b checkedBackend) Build(config.LockingConfig) (lockbuild.Provided, error) {
	return lockbuild.Provided{
		Provider: memlock.New(),
		Close:    func() error { *b.closed++; return nil },
		Check: func(ctx context.Context, _ *locking.DistributedLock) error {
			if _, ok := ctx.Deadline(); !ok {
				return errors.New("the check has no deadline")
			}
			return b.check
		},
	}, nil
}

// TestOpen_X1_WithoutOpenerUsesBuildAndCheck: a backend without Opener is
// opened through its Build and start check, bounded by the timeout: a
// FieldError is returned as it is, any other error is an
// UnreachableError naming the provider; nothing stays open after a
// failure.
func TestOpen_X1_WithoutOpenerUsesBuildAndCheck(t *testing.T) {
	refused := &config.FieldError{Key: "locking.checked", Reason: "refused"}
	for _, tt := range []struct {
		name  string
		check error
		want  string
	}{
		{"answers", nil, ""},
		{"refuses the configuration", refused, "config: locking.checked: refused"},
		{"outage", syscall.ECONNREFUSED, "checked unreachable: connection refused"},
		{"no answer", context.DeadlineExceeded, "checked unreachable: no answer within 250ms (--timeout)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			closed := 0
			be := checkedBackend{check: tt.check, closed: &closed}
			cfg, err := config.Load("", lockbuild.LoadOption(be), config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=checked"}))
			if err != nil {
				t.Fatal(err)
			}
			s, err := lockbuild.Open(t.Context(), cfg.Locking, lockbuild.OpenOptions{Timeout: 250 * time.Millisecond, TimeoutFrom: "--timeout"}, lockbuild.WithBackends(be))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if s.Kind != "checked" || s.Timeout != 250*time.Millisecond || !s.Lock.Coordinated() || s.JobKeys != nil || s.Notes != nil {
					t.Errorf("session %+v", s)
				}
				if err := s.Close(); err != nil || closed != 1 {
					t.Errorf("Close: %v, closed %d", err, closed)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Open = %v, want %q", err, tt.want)
			}
			var fe *config.FieldError
			var ue *lockbuild.UnreachableError
			if errors.As(err, &fe) == (tt.check != refused) || errors.As(err, &ue) == (tt.check == refused) {
				t.Errorf("Open = %T %v", err, err)
			}
			if closed != 1 {
				t.Errorf("closed %d times after a failed check, want once", closed)
			}
		})
	}
}

// TestOpen_O1_RedisRefusedAtOnce: over Redis, Open pings once with a
// client that retries nothing: a refused connection is reported as such,
// naming the address, and a server that answers is opened with its
// target and a job listing.
func TestOpen_O1_RedisRefusedAtOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := ln.Addr().String()
	_ = ln.Close()
	load := func(addr string) config.LockingConfig {
		cfg, err := config.Load("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=redis", "HOSTLOOM_LOCKING__REDIS__ADDRS=" + addr}))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Locking
	}
	_, err = lockbuild.Open(t.Context(), load(closedAddr), lockbuild.OpenOptions{Timeout: 10 * time.Second, TimeoutFrom: "--timeout"})
	if want := "redis " + closedAddr + " unreachable: connection refused"; err == nil || err.Error() != want {
		t.Fatalf("Open = %v, want %q", err, want)
	}

	srv := redistest.Start(t)
	s, err := lockbuild.Open(t.Context(), load(srv.Addr()), lockbuild.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Kind != config.ProviderRedis || len(s.Target.Addrs) != 1 || s.Target.Addrs[0] != srv.Addr() || s.Timeout != config.RedisDefaults().DialTimeout || s.JobKeys == nil || s.Notes == nil {
		t.Errorf("session %+v", s)
	}
	ctx := t.Context()
	if err := s.Notes.SetNote(ctx, "n", "v", time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Notes.Note(ctx, "n"); v != "v" || !ok || err != nil {
		t.Errorf("Note = %q %t %v", v, ok, err)
	}
	if err := s.Notes.DeleteNote(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Notes.Note(ctx, "n"); ok || err != nil {
		t.Errorf("Note after DeleteNote = %t %v", ok, err)
	}
}

// TestUnreachable_O1_WordsTheCause: the cause in words, where first.
func TestUnreachable_O1_WordsTheCause(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), "db 10.0.0.1:1 unreachable: connection refused"},
		{context.DeadlineExceeded, "db 10.0.0.1:1 unreachable: no answer within 2s (locking.db.dial_timeout)"},
		{os.ErrDeadlineExceeded, "db 10.0.0.1:1 unreachable: no answer within 2s (locking.db.dial_timeout)"},
		{context.Canceled, "db 10.0.0.1:1: interrupted"},
		{errors.New("tls: bad certificate\nmore"), "db 10.0.0.1:1 unreachable: tls: bad certificate"},
	} {
		err := lockbuild.Unreachable("db 10.0.0.1:1", 2*time.Second, "locking.db.dial_timeout", tt.err)
		if err.Error() != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("Unreachable(%v) = %q, want %q", tt.err, err, tt.want)
		}
	}
	d, from := lockbuild.Bound(lockbuild.OpenOptions{}, 0, "locking.db.dial_timeout")
	if d != lockbuild.DefaultOpenTimeout || strings.Contains(from, "locking.db") {
		t.Errorf("Bound without a timeout = %v %q", d, from)
	}
}
