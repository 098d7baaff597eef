package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// proc is a private process the package runs (postgres or pgbouncer),
// listening on 127.0.0.1 at port, with its files in dir.
type proc struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and been reaped
}

// privateDir creates a new temporary directory named prefix…, handed to
// cred's user when cred is not nil.
func privateDir(prefix string, cred *syscall.Credential) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", fmt.Errorf("pgtest: temp dir: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("pgtest: hand %s to uid %d: %w", dir, cred.Uid, err)
		}
	}
	return dir, nil
}

// startProc starts cmd in dir with cred, its output going to out, and
// reaps it when it exits, closing out. out is closed on error too.
func startProc(cmd *exec.Cmd, dir string, port int, cred *syscall.Credential, out *os.File) (*proc, error) {
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr(cred)
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return nil, err
	}
	p := &proc{dir: dir, port: port, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(p.done)
	}()
	return p, nil
}

// connString is the connection string of database dbname at the process,
// as postgres, over TCP on 127.0.0.1.
func (p *proc) connString(dbname string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=%s sslmode=disable", p.port, dbname)
}

// kill sends SIGKILL and waits until the process is reaped.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGINT (a fast shutdown for postgres), then SIGKILL after
// stopTimeout, waits for the process and removes its directory. It is
// safe to call more than once.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		p.kill()
	}
	_ = os.RemoveAll(p.dir)
}
