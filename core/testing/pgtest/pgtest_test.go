package pgtest_test

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/hostloom/hostloom/core/testing/pgtest"
)

// TestStart_ServesAndStops starts a server, checks it listens on loopback
// only and is gone after Stop.
func TestStart_ServesAndStops(t *testing.T) {
	s := start(t)
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
	s := start(t)
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

// TestExec_RunsStatementsAndReportsErrors: Exec runs a statement on the
// database it names and returns the server's error for a bad one, with
// the session usable afterwards.
func TestExec_RunsStatementsAndReportsErrors(t *testing.T) {
	s := start(t)
	defer s.Stop()
	if err := s.Exec("postgres", `CREATE DATABASE "exec ""x"""`); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(`exec "x"`, "CREATE TABLE t (x int)"); err != nil {
		t.Fatalf("a statement on the new database: %v", err)
	}
	err := s.Exec(`exec "x"`, "CREATE TABLE t (x int)")
	if err == nil || !strings.Contains(err.Error(), "42P07") {
		t.Fatalf("creating the table again: %v, want the server's duplicate_table error", err)
	}
	if err := s.Exec("no_such_database", "SELECT 1"); err == nil || !strings.Contains(err.Error(), "no_such_database") {
		t.Fatalf("on a missing database: %v, want an error naming it", err)
	}
	if err := s.Exec("postgres", `DROP DATABASE "exec ""x""" WITH (FORCE)`); err != nil {
		t.Fatal(err)
	}
}

// start starts a server or skips t (fails it when Required); the caller
// stops it.
func start(t *testing.T) *pgtest.Server {
	t.Helper()
	s, err := pgtest.Start()
	if err != nil {
		if pgtest.Required() {
			t.Fatalf("PostgreSQL did not start: %v", err)
		}
		t.Skipf("PostgreSQL did not start: %v", err)
	}
	return s
}

// runner is a testing.M stand-in: Run runs the function.
type runner func() int

func (r runner) Run() int { return r() }

// TestShared_NewDatabaseIsFreshAndDropped: Main runs the tests with a
// server up and returns their code; each NewDatabase is a database of its
// own, usable at once and dropped when its test ends.
func TestShared_NewDatabaseIsFreshAndDropped(t *testing.T) {
	var sh pgtest.Shared
	var s *pgtest.Server
	var names []string
	code := sh.Main(runner(func() int {
		for i := range 2 {
			t.Run(fmt.Sprint("db", i), func(t *testing.T) {
				s = sh.Server(t)
				dsn := sh.NewDatabase(t)
				name := dsn[strings.Index(dsn, "dbname=")+len("dbname=") : strings.Index(dsn, " sslmode")]
				names = append(names, name)
				if err := s.Exec(name, "CREATE TABLE t (x int)"); err != nil {
					t.Fatalf("a fresh database: %v", err)
				}
			})
		}
		if len(names) == 2 && names[0] != names[1] {
			for _, name := range names {
				if err := s.Exec(name, "SELECT 1"); err == nil {
					t.Errorf("database %s still exists after its test ended", name)
				}
			}
		}
		return 7
	}))
	if code != 7 {
		t.Errorf("Main returned %d, want the tests' 7", code)
	}
	if len(names) != 2 || names[0] == names[1] {
		t.Fatalf("databases %q, want two distinct ones", names)
	}
}

// TestServer_ShutdownAndRestart: every shutdown mode stops the server, and
// Restart brings it back on the same port with the same data directory;
// an unknown mode is an error naming it.
func TestServer_ShutdownAndRestart(t *testing.T) {
	s := start(t)
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

// TestServer_KillWaitsForTheServersProcesses: Shutdown(ShutdownKill)
// returns once no process of the server holds its port, although a
// backend, forked for a client that has sent nothing yet, outlives the
// postmaster until it notices the crash.
func TestServer_KillWaitsForTheServersProcesses(t *testing.T) {
	s := start(t)
	defer s.Stop()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port()))
	for round := range 5 {
		idle, err := net.Dial("tcp", addr) // its backend waits for a startup packet
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Shutdown(pgtest.ShutdownKill); err != nil {
			t.Fatal(err)
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			t.Fatalf("round %d: %s still accepts connections after Shutdown(kill) returned", round, addr)
		}
		_ = idle.Close()
		if err := s.Restart(); err != nil {
			t.Fatalf("round %d: restart: %v\n%s", round, err, s.Log())
		}
	}
}
