//go:build unix

package chaos

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hostloom/hostloom/internal/redistest"
)

// RedisServer is a redis-server process the harness can kill and restart
// on the same port (empty: nothing is persisted), as a fault. Its methods
// are safe for concurrent use.
type RedisServer struct {
	bin   string
	port  int
	dir   string
	extra []string
	conf  string // sentinel config file: run as a sentinel

	mu   sync.Mutex
	proc *exec.Cmd
	done chan struct{}
}

// redisBinary finds redis-server, or returns redistest.ErrNoServer.
func redisBinary() (string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", redistest.ErrNoServer
	}
	return bin, nil
}

// StartRedis starts a redis-server on a free loopback port with its files
// under dir; extra arguments are appended (e.g. cluster mode). With
// cluster set the port's cluster bus (port+10000) is checked free too.
func StartRedis(dir string, cluster bool, extra ...string) (*RedisServer, error) {
	bin, err := redisBinary()
	if err != nil {
		return nil, err
	}
	var last error
	for range 5 {
		port, err := freePort(cluster)
		if err != nil {
			return nil, err
		}
		sdir := filepath.Join(dir, "redis-"+strconv.Itoa(port))
		if err := os.MkdirAll(sdir, 0o700); err != nil {
			return nil, fmt.Errorf("chaos: redis dir: %w", err)
		}
		s := &RedisServer{bin: bin, port: port, dir: sdir, extra: extra}
		if last = s.launch(); last == nil {
			return s, nil
		}
	}
	return nil, last
}

// startSentinel starts a sentinel monitoring the master named name at
// masterAddr, with a one-second down-after.
func startSentinel(dir, name, masterAddr string) (*RedisServer, error) {
	bin, err := redisBinary()
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(masterAddr, ":")
	var last error
	for range 5 {
		p, err := freePort(false)
		if err != nil {
			return nil, err
		}
		sdir := filepath.Join(dir, "sentinel-"+strconv.Itoa(p))
		if err := os.MkdirAll(sdir, 0o700); err != nil {
			return nil, fmt.Errorf("chaos: sentinel dir: %w", err)
		}
		conf := filepath.Join(sdir, "sentinel.conf")
		body := fmt.Sprintf("sentinel monitor %s %s %s 2\nsentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s 10000\nsentinel parallel-syncs %s 1\n",
			name, host, port, name, sentinelDownAfter.Milliseconds(), name, name)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			return nil, fmt.Errorf("chaos: sentinel config: %w", err)
		}
		s := &RedisServer{bin: bin, port: p, dir: sdir, conf: conf}
		if last = s.launch(); last == nil {
			return s, nil
		}
	}
	return nil, last
}

func freePort(cluster bool) (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("chaos: free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if cluster {
			if port+10000 > 65535 {
				_ = l.Close()
				continue
			}
			bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
			if err != nil {
				_ = l.Close()
				continue
			}
			_ = bus.Close()
		}
		_ = l.Close()
		return port, nil
	}
	return 0, errors.New("chaos: no free port")
}

// Addr is the server's host:port.
func (s *RedisServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// launch starts the process and waits for PING; the caller holds no lock
// or s.mu.
func (s *RedisServer) launch() error {
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--daemonize", "no"}
	if s.conf != "" {
		args = []string{s.conf, "--sentinel", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir, "--daemonize", "no"}
	}
	args = append(args, s.extra...)
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("chaos: redis log: %w", err)
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("chaos: start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(done)
	}()
	if err := redistest.WaitPing(s.Addr(), done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("chaos: redis-server on %s: %w", s.Addr(), err)
	}
	s.proc, s.done = cmd, done
	return nil
}

// Kill sends SIGKILL and waits: a crash. The server stays down until
// Restart.
func (s *RedisServer) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *RedisServer) killLocked() {
	if s.proc != nil {
		_ = s.proc.Process.Signal(syscall.SIGKILL)
		<-s.done
		s.proc = nil
	}
}

// Signal sends sig to the running server (e.g. SIGSTOP).
func (s *RedisServer) Signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return errors.New("chaos: redis-server not running")
	}
	return s.proc.Process.Signal(sig)
}

// Restart kills the server if it runs and starts an empty one on the same
// port, retrying while the port is released.
func (s *RedisServer) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	var err error
	for range 40 {
		if err = s.launch(); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// Stop ends the server and waits for it.
func (s *RedisServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		_ = s.proc.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			_ = s.proc.Process.Signal(syscall.SIGKILL)
			<-s.done
		}
		s.proc = nil
	}
}
