// Package redisproc starts a private redis-server on loopback for the
// benchmark harness and reads its statistics.
package redisproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a private redis-server process on 127.0.0.1.
type Server struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start launches bin (redis-server) on a free loopback port with persistence
// off, and waits until it answers PING.
func Start(bin string) (*Server, error) {
	if bin == "" {
		bin = "redis-server"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("redisproc: %s not found: %w", bin, err)
	}
	var lastErr error
	for range 5 {
		s, err := launch(path)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func launch(path string) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("redisproc: free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir, err := os.MkdirTemp("", "hlbench-redis-")
	if err != nil {
		return nil, fmt.Errorf("redisproc: temp dir: %w", err)
	}
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("redisproc: log: %w", err)
	}
	cmd := exec.Command(path,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--daemonize", "no",
		"--maxclients", "20000",
	)
	cmd.Dir = dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("redisproc: start: %w", err)
	}
	s := &Server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(s.done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(s.addr); err == nil {
			return s, nil
		} else if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("redisproc: no PING reply on %s: %w", s.addr, err)
		}
		select {
		case <-s.done:
			b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("redisproc: redis-server exited: %s", b)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("reply %q", line)
	}
	return nil
}

// Addr is host:port.
func (s *Server) Addr() string { return s.addr }

// Stop ends the server and removes its directory.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	_ = os.RemoveAll(s.dir)
}

// Version returns the server's redis_version.
func Version(ctx context.Context, c *redis.Client) (string, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "", errors.New("redisproc: no redis_version in INFO")
}

// CommandStats returns the calls per command from INFO commandstats, without
// the INFO and CONFIG commands the harness itself sends.
func CommandStats(ctx context.Context, c *redis.Client) (map[string]int64, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, fields, ok := strings.Cut(rest, ":")
		if !ok || name == "info" || strings.HasPrefix(name, "config") {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("redisproc: commandstats %q: %w", line, err)
				}
				out[name] = n
			}
		}
	}
	return out, nil
}

// Delta returns after-before per command and the total.
func Delta(before, after map[string]int64) (map[string]int64, int64) {
	d := map[string]int64{}
	var total int64
	for k, v := range after {
		if n := v - before[k]; n != 0 {
			d[k] = n
			total += n
		}
	}
	return d, total
}
