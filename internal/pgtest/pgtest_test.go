package pgtest_test

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/hostloom/hostloom/internal/pgtest"
)

// TestStart_ServesAndStops starts a server, checks it listens on loopback
// only and is gone after Stop.
func TestStart_ServesAndStops(t *testing.T) {
	s, err := pgtest.Start()
	if err != nil {
		if pgtest.Required() {
			t.Fatalf("PostgreSQL did not start: %v", err)
		}
		t.Skipf("PostgreSQL did not start: %v", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port()))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		s.Stop()
		t.Fatalf("dial %s: %v\n%s", addr, err, s.Log())
	}
	_ = c.Close()
	if want := "host=127.0.0.1 port=" + strconv.Itoa(s.Port()) + " user=postgres dbname=x sslmode=disable"; s.ConnString("x") != want {
		t.Errorf("ConnString = %q, want %q", s.ConnString("x"), want)
	}
	s.Stop()
	if c, err := net.Dial("tcp", addr); err == nil {
		_ = c.Close()
		t.Fatalf("%s still accepts connections after Stop", addr)
	}
	s.Stop() // a second Stop is harmless
}

// TestStartBouncer_Serves: PgBouncer in transaction mode answers the
// startup handshake for the server's database.
func TestStartBouncer_Serves(t *testing.T) {
	s, err := pgtest.Start()
	if err != nil {
		if pgtest.Required() {
			t.Fatalf("PostgreSQL did not start: %v", err)
		}
		t.Skipf("PostgreSQL did not start: %v", err)
	}
	defer s.Stop()
	b, err := pgtest.StartBouncer(s, "transaction", 1)
	if errors.Is(err, pgtest.ErrNoBouncer) && !pgtest.Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.ConnString("x"), "dbname=x") {
		t.Errorf("ConnString = %q", b.ConnString("x"))
	}
	b.Stop()
	b.Stop()
}

// TestServer_ShutdownAndRestart: every shutdown mode stops the server, and
// Restart brings it back on the same port with the same data directory;
// an unknown mode is an error naming it.
func TestServer_ShutdownAndRestart(t *testing.T) {
	s, err := pgtest.Start()
	if err != nil {
		if pgtest.Required() {
			t.Fatalf("PostgreSQL did not start: %v", err)
		}
		t.Skipf("PostgreSQL did not start: %v", err)
	}
	defer s.Stop()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port()))
	for _, mode := range []string{pgtest.ShutdownFast, pgtest.ShutdownImmediate, pgtest.ShutdownKill} {
		if err := s.Shutdown(mode); err != nil {
			t.Fatal(err)
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			t.Fatalf("%s: %s still accepts connections", mode, addr)
		}
		if err := s.Restart(); err != nil {
			t.Fatalf("restart after %s: %v\n%s", mode, err, s.Log())
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("after %s and Restart: %v", mode, err)
		}
		_ = c.Close()
	}
	if err := s.Restart(); err != nil { // a running server restarts too
		t.Fatal(err)
	}
	if err := s.Shutdown("smart"); err == nil || !strings.Contains(err.Error(), `"smart"`) {
		t.Errorf("Shutdown(smart) = %v", err)
	}
}
