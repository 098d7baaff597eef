package pgtest

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// Shared is the server of one test binary, shared by its tests: TestMain
// runs the tests through Main, each test takes a fresh database of its own
// from NewDatabase. The zero Shared is ready to use.
type Shared struct {
	server *Server
	err    error // why there is no server
	seq    atomic.Int64
}

// TB is the part of testing.TB that Shared uses (so that the package does
// not link package testing into the binaries that start a Server).
type TB interface {
	Helper()
	Name() string
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Main starts the server, runs the tests (m.Run), stops the server and
// returns the tests' exit code. When the server does not start, the tests
// run and those that need it skip with the reason; when Required, Main
// instead prints the reason and returns 1 without running them.
func (sh *Shared) Main(m interface{ Run() int }) int {
	sh.server, sh.err = Start()
	if sh.err != nil && Required() {
		fmt.Fprintf(os.Stderr, "PostgreSQL is required here (CI or HOSTLOOM_REQUIRE_POSTGRES=1 is set) but did not start: %v\n", sh.err)
		return 1
	}
	code := m.Run()
	if sh.server != nil {
		sh.server.Stop()
	}
	return code
}

// Server returns the running server; without one it skips t with the
// reason.
func (sh *Shared) Server(t TB) *Server {
	t.Helper()
	if sh.err != nil {
		t.Skipf("PostgreSQL did not start, skipping (install the postgresql package; set CI=1 to make this a failure): %v", sh.err)
	}
	if sh.server == nil {
		t.Fatalf("pgtest: no server: TestMain must run the tests through Shared.Main")
	}
	return sh.server
}

// NewDatabase creates a fresh database named after t and returns its
// connection string; the database is dropped (WITH (FORCE)) when t ends.
// Without a server it skips t with the reason.
func (sh *Shared) NewDatabase(t TB) string {
	t.Helper()
	s := sh.Server(t)
	name := fmt.Sprintf("t%d_%s", sh.seq.Add(1), strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	ident := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
	if err := s.Exec("postgres", "CREATE DATABASE "+ident); err != nil {
		t.Fatalf("%v\nserver log:\n%s", err, s.Log())
	}
	t.Cleanup(func() {
		if err := s.Exec("postgres", "DROP DATABASE "+ident+" WITH (FORCE)"); err != nil {
			t.Errorf("%v", err)
		}
	})
	return s.ConnString(name)
}
