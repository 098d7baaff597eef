// Package pgtest starts a private PostgreSQL server for tests.
//
// # Server
//
// Start creates a cluster with initdb in a new temporary directory and runs
// postgres on it, listening on 127.0.0.1 only at a free port, with its unix
// socket in that directory, fsync off and trust authentication (the server
// is reachable from this machine only and lives as long as the test run).
// Stop shuts it down (fast shutdown, then SIGKILL) and removes the
// directory. On Linux the server also receives SIGKILL when the test binary
// dies.
//
// # One server per test binary
//
// A test binary's TestMain runs its tests through Shared.Main, which
// starts a Server for all of them and stops it afterwards; each test
// takes a database of its own from Shared.NewDatabase (created and
// dropped with Server.Exec, which speaks the wire protocol itself: the
// package links no driver).
//
// # Binaries
//
// initdb and postgres are taken from the directory named by
// HOSTLOOM_PG_BIN, else from PATH, else from the newest
// /usr/lib/postgresql/<version>/bin (where Debian's postgresql package puts
// them).
//
// # Root
//
// initdb and postgres refuse to run as root. When the tests run as root (as
// in CI), the server runs as the system user "postgres" (created by the
// Debian package), or "nobody" when there is none; the temporary directory
// is handed to that user.
//
// # PgBouncer
//
// StartBouncer runs a private PgBouncer (binary from HOSTLOOM_PGBOUNCER,
// PATH or /usr/sbin/pgbouncer) on 127.0.0.1 in front of a Server, in the
// pool mode asked for, with a given number of server connections; it
// returns ErrNoBouncer when there is no binary.
//
// # Missing PostgreSQL
//
// When the server cannot start, Start returns the reason; the tests skip
// with it, or fail when Required (the environment variable CI is non-empty,
// or HOSTLOOM_REQUIRE_POSTGRES is 1).
package pgtest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// BinEnv names the environment variable that selects the directory holding
// initdb and postgres.
const BinEnv = "HOSTLOOM_PG_BIN"

// startTimeout bounds how long the server may take to accept connections.
const startTimeout = 30 * time.Second

// stopTimeout bounds the fast shutdown before the server is killed.
const stopTimeout = 10 * time.Second

// execTimeout bounds one Exec (CREATE DATABASE copies a template).
const execTimeout = time.Minute

// Required reports whether the PostgreSQL tests must run rather than skip:
// the environment variable CI is non-empty or HOSTLOOM_REQUIRE_POSTGRES is 1.
func Required() bool {
	return os.Getenv("CI") != "" || os.Getenv("HOSTLOOM_REQUIRE_POSTGRES") == "1"
}

// Server is a private PostgreSQL server process. Shutdown and Restart
// stop it and start it again on the same port and data, as a fault
// injector does; its methods are safe for concurrent use.
type Server struct {
	dir, bin, data string
	cred           *syscall.Credential
	port           int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and been reaped
}

// ConnString is the connection string of the server's database dbname, as
// the superuser postgres, over TCP on 127.0.0.1.
func (s *Server) ConnString(dbname string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=%s sslmode=disable", s.port, dbname)
}

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// binDir returns the directory holding initdb and postgres.
func binDir() (string, error) {
	if d := os.Getenv(BinEnv); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("pgtest: %s=%q: %w", BinEnv, d, err)
		}
		return d, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(dirs) == 0 {
		return "", errors.New("pgtest: initdb not found on PATH nor in /usr/lib/postgresql/*/bin: install the postgresql package to run the PostgreSQL tests")
	}
	version := func(p string) int { // /usr/lib/postgresql/<version>/bin/initdb
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
		return n
	}
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	return filepath.Dir(dirs[0]), nil
}

// runAs returns the credentials the server runs with: nil when the tests do
// not run as root, else those of "postgres" or "nobody".
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			errs = append(errs, fmt.Errorf("user %s: uid %q gid %q", name, u.Uid, u.Gid))
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
	}
	return nil, fmt.Errorf("pgtest: running as root and no unprivileged user to run postgres as: %w", errors.Join(errs...))
}

// Start creates a cluster in a new temporary directory and starts postgres
// on it. The caller stops it with Stop.
func Start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := privateDir("pgtest-", cred)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"),
		"-D", data, "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.Dir = dir
	initdb.SysProcAttr = sysProcAttr(cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	var lastErr error
	for range 5 { // another process may take the free port in between
		s, err := launch(bin, dir, data, cred)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	_ = os.RemoveAll(dir)
	return nil, lastErr
}

// launch starts postgres on a free port and waits until it accepts
// connections.
func launch(bin, dir, data string, cred *syscall.Credential) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin, data: data, cred: cred, port: port}
	if err := s.run(); err != nil {
		return nil, err
	}
	return s, nil
}

// run starts postgres on s.port and waits until it accepts connections;
// on failure the process is killed.
func (s *Server) run() error {
	logPath := filepath.Join(s.dir, "server.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("pgtest: log file: %w", err)
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"),
		"-D", s.data,
		"-p", strconv.Itoa(s.port),
		"-k", s.dir, // unix socket directory: private to this server
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "logging_collector=off",
	)
	cmd.Dir = s.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr(s.cred)
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	if err := s.waitReady(); err != nil {
		_ = s.kill()
		log, _ := os.ReadFile(logPath)
		return fmt.Errorf("pgtest: postgres on 127.0.0.1:%d: %w; log:\n%s", s.port, err, log)
	}
	return nil
}

// Shutdown modes of Server.Shutdown: PostgreSQL's own (pg_ctl -m), and a
// crash.
const (
	// ShutdownFast (SIGINT) ends every session and checkpoints.
	ShutdownFast = "fast"
	// ShutdownImmediate (SIGQUIT) ends every process at once without a
	// checkpoint: the next start runs crash recovery from the WAL.
	ShutdownImmediate = "immediate"
	// ShutdownKill (SIGKILL to the postmaster) is a crash of the server
	// process; its backends notice and exit. Shutdown returns once they
	// have (those still running after ten seconds are killed), so the
	// port is closed and Restart finds no process of the old server.
	ShutdownKill = "kill"
)

// Shutdown stops the server in mode (ShutdownFast, ShutdownImmediate or
// ShutdownKill) and waits for it, keeping its data, so Restart can start it
// again. A server that does not stop within ten seconds is killed.
func (s *Server) Shutdown(mode string) error {
	sig := map[string]syscall.Signal{ShutdownFast: syscall.SIGINT, ShutdownImmediate: syscall.SIGQUIT, ShutdownKill: syscall.SIGKILL}
	sg, ok := sig[mode]
	if !ok {
		return fmt.Errorf("pgtest: shutdown mode %q is not one of fast, immediate, kill", mode)
	}
	if sg == syscall.SIGKILL {
		return s.crash(stopTimeout)
	}
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	_ = cmd.Process.Signal(sg)
	select {
	case <-done:
	case <-time.After(stopTimeout):
		return s.kill()
	}
	return nil
}

// crash kills the postmaster with SIGKILL and waits until every process
// it had started has exited too: those hold the listening socket (a child
// forked a moment before the kill may not have closed its copy yet) and
// the shared memory a restart needs, and outlive the postmaster until they
// notice it died. They get grace to do so, as after a real crash; then
// they are killed too. The postmaster is stopped (SIGSTOP) while its
// children are listed, so it forks none after the list is taken.
//
// Where the processes cannot be listed (no /proc), crash waits for the
// postmaster only.
func (s *Server) crash(grace time.Duration) error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	pid := cmd.Process.Pid
	_ = cmd.Process.Signal(syscall.SIGSTOP)
	for !stopped(pid) {
		select {
		case <-done:
		case <-time.After(time.Millisecond):
		}
	}
	kids := childrenOf(pid)
	defer func() {
		for _, c := range kids {
			c.release()
		}
	}()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	if waitExited(kids, grace) {
		return nil
	}
	for _, c := range kids {
		if c.running() {
			c.kill()
		}
	}
	if waitExited(kids, stopTimeout) {
		return nil
	}
	return fmt.Errorf("pgtest: processes of the postgres server on 127.0.0.1:%d survive SIGKILL", s.port)
}

// waitExited polls until no process of kids runs, or timeout; it reports
// whether none does. The processes are not this process's children, so
// no event announces their exit.
func waitExited(kids []child, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		left := false
		for _, c := range kids {
			left = left || c.running()
		}
		if !left {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Restart starts the server again on its port and data after Shutdown (or
// stops it fast first when it runs), retrying while the port is being
// released, and waits until it accepts connections.
func (s *Server) Restart() error {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	select {
	case <-done:
	default:
		if err := s.Shutdown(ShutdownFast); err != nil {
			return err
		}
	}
	var err error
	for range 20 {
		if err = s.run(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// waitReady connects until the server answers, it exits, or startTimeout.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		s.mu.Lock()
		done := s.done
		s.mu.Unlock()
		select {
		case <-done:
			return errors.New("process exited")
		default:
		}
		err := ping(s.port)
		if err == nil {
			return nil
		}
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %v: %w", startTimeout, lastErr)
}

// ping opens a session as postgres on database postgres over TCP at port
// on 127.0.0.1 and reports nil once the server authenticates it and is
// ready for a query.
func ping(port int) error {
	conn, _, err := startup(port, "postgres", time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	terminate(conn)
	return nil
}

// startup opens a session as postgres on database dbname over TCP at port
// on 127.0.0.1, all of it within timeout, and returns it once the server
// has authenticated it and is ready for a query.
// It speaks the wire protocol (version 3.0) with the standard library
// only, so this package adds no driver to the module that imports it.
func startup(port int, dbname string, timeout time.Duration) (net.Conn, *bufio.Reader, error) {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), timeout)
	if err != nil {
		return nil, nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	var body []byte
	body = binary.BigEndian.AppendUint32(body, 3<<16) // protocol 3.0
	for _, kv := range []string{"user", "postgres", "database", dbname} {
		body = append(append(body, kv...), 0)
	}
	body = append(body, 0)
	msg := binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))
	if _, err := conn.Write(append(msg, body...)); err != nil {
		conn.Close()
		return nil, nil, err
	}
	r := bufio.NewReader(conn)
	for {
		typ, payload, err := readMessage(r)
		if err != nil {
			conn.Close()
			return nil, nil, err
		}
		switch typ {
		case 'E': // ErrorResponse, e.g. "the database system is starting up"
			conn.Close()
			return nil, nil, serverError(strings.ReplaceAll(string(payload), "\x00", " "))
		case 'R': // authentication request: 0 is AuthenticationOk (trust)
			if len(payload) < 4 || binary.BigEndian.Uint32(payload) != 0 {
				conn.Close()
				return nil, nil, errors.New("server asks for authentication")
			}
		case 'Z': // ReadyForQuery
			return conn, r, nil
		}
	}
}

// readMessage reads one backend message: its type and payload.
func readMessage(r *bufio.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[1:])) - 4
	if n < 0 || n > 1<<20 {
		return 0, nil, fmt.Errorf("message %q of length %d", hdr[0], n)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	return hdr[0], payload, nil
}

// terminate ends a session politely.
func terminate(conn net.Conn) { _, _ = conn.Write([]byte{'X', 0, 0, 0, 4}) }

// Exec runs sql, one statement, as postgres on database dbname (simple
// query protocol, within a minute) and returns the server's error, if
// any. It is how the package creates and drops test databases without a
// driver.
func (s *Server) Exec(dbname, sql string) error {
	conn, r, err := startup(s.port, dbname, execTimeout)
	if err != nil {
		return fmt.Errorf("pgtest: connect to %s: %w", dbname, err)
	}
	defer conn.Close()
	msg := append([]byte{'Q'}, binary.BigEndian.AppendUint32(nil, uint32(4+len(sql)+1))...)
	if _, err := conn.Write(append(append(msg, sql...), 0)); err != nil {
		return fmt.Errorf("pgtest: %s: %w", sql, err)
	}
	var qerr error
	for {
		typ, payload, err := readMessage(r)
		if err != nil {
			return fmt.Errorf("pgtest: %s: %w", sql, err)
		}
		switch typ {
		case 'E':
			qerr = fmt.Errorf("pgtest: %s: %w", sql, serverError(strings.ReplaceAll(string(payload), "\x00", " ")))
		case 'Z': // ReadyForQuery: the statement is done
			terminate(conn)
			return qerr
		}
	}
}

// serverError is an ErrorResponse to the startup message.
type serverError string

func (e serverError) Error() string { return "server: " + string(e) }

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// kill kills the server, its postmaster and every process it started,
// and waits until they have exited (see crash).
func (s *Server) kill() error { return s.crash(0) }

// Stop shuts the server down (SIGINT: fast shutdown, then SIGKILL after
// ten seconds), waits for it and removes its directory. It is safe to call
// more than once.
func (s *Server) Stop() {
	_ = s.Shutdown(ShutdownFast)
	_ = os.RemoveAll(s.dir)
}

// Log returns the end of the server's log, for failure messages.
func (s *Server) Log() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return strings.TrimSpace(string(b))
}
