package pgtest_test

import (
	"net"
	"strconv"
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
