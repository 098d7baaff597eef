package pgtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// BouncerEnv names the environment variable that selects the pgbouncer
// binary (default: pgbouncer on PATH, else /usr/sbin/pgbouncer, where
// Debian's pgbouncer package puts it).
const BouncerEnv = "HOSTLOOM_PGBOUNCER"

// ErrNoBouncer is wrapped by StartBouncer's error when no pgbouncer binary
// is found.
var ErrNoBouncer = errors.New("pgtest: pgbouncer not found: install the pgbouncer package to run the PgBouncer tests")

// Bouncer is a private PgBouncer process in front of a Server.
type Bouncer struct{ proc }

// StartBouncer starts PgBouncer on 127.0.0.1 at a free port in front of s,
// in pool mode mode ("session", "transaction" or "statement"), accepting
// any user without a password (auth_type any; loopback only), with
// poolSize server connections per database and user, so that client
// connections share server sessions as they would in production. As root,
// it runs as the user the server runs as. The caller stops it with Stop.
func StartBouncer(s *Server, mode string, poolSize int) (*Bouncer, error) {
	bin := os.Getenv(BouncerEnv)
	if bin == "" {
		p, err := exec.LookPath("pgbouncer")
		if err != nil {
			if _, err := os.Stat("/usr/sbin/pgbouncer"); err != nil {
				return nil, ErrNoBouncer
			}
			p = "/usr/sbin/pgbouncer"
		}
		bin = p
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := privateDir("pgbouncer-", cred)
	if err != nil {
		return nil, err
	}
	b, err := launchBouncer(bin, dir, s, mode, poolSize, cred)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return b, nil
}

func launchBouncer(bin, dir string, s *Server, mode string, poolSize int, cred *syscall.Credential) (*Bouncer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ini := strings.Join([]string{
		"[databases]",
		fmt.Sprintf("* = host=127.0.0.1 port=%d user=postgres", s.port),
		"[pgbouncer]",
		"listen_addr = 127.0.0.1",
		"listen_port = " + strconv.Itoa(port),
		"unix_socket_dir =",
		"auth_type = any",
		"pool_mode = " + mode,
		"default_pool_size = " + strconv.Itoa(poolSize),
		"max_client_conn = 200",
		"ignore_startup_parameters = extra_float_digits",
		"logfile = " + filepath.Join(dir, "pgbouncer.log"),
		"",
	}, "\n")
	conf := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(conf, []byte(ini), 0o644); err != nil {
		return nil, fmt.Errorf("pgtest: pgbouncer config: %w", err)
	}
	out, err := os.OpenFile(filepath.Join(dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	p, err := startProc(exec.Command(bin, conf), dir, port, cred, out)
	if err != nil {
		return nil, fmt.Errorf("pgtest: start pgbouncer: %w", err)
	}
	b := &Bouncer{*p}
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-b.done:
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			so, _ := os.ReadFile(filepath.Join(dir, "stdout.log"))
			return nil, fmt.Errorf("pgtest: pgbouncer exited; log:\n%s%s", log, so)
		default:
		}
		err := ping(port)
		if err == nil {
			return b, nil
		}
		var se serverError
		if errors.As(err, &se) || time.Now().After(deadline) { // PgBouncer answers at once once it listens
			b.kill()
			return nil, fmt.Errorf("pgtest: pgbouncer on 127.0.0.1:%d: %w", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ConnString is the connection string of database dbname through the
// bouncer, as postgres.
func (b *Bouncer) ConnString(dbname string) string { return b.connString(dbname) }

// Stop shuts PgBouncer down (SIGINT, then SIGKILL after ten seconds) and
// removes its directory. It is safe to call more than once.
func (b *Bouncer) Stop() { b.stop() }
