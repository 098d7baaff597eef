//go:build unix

package chaos

import (
	"os"

	"github.com/hostloom/hostloom/core/testing/redistest"
)

// RedisServer is a redis-server process the harness can kill and restart
// on the same port (empty: nothing is persisted), as a fault. It is a
// redistest.Server whose Restart returns its error instead of failing a
// test. Its methods are safe for concurrent use.
type RedisServer struct {
	srv *redistest.Server
}

// redisBinary finds the server binary (HOSTLOOM_REDIS_SERVER, else
// redis-server, else valkey-server), or returns an error wrapping
// redistest.ErrNoServer.
func redisBinary() (string, error) { return redistest.ServerBinary() }

// StartRedis starts a redis-server on a free loopback port with its files
// in a directory under dir (kept after Stop); extra arguments are appended
// (e.g. cluster mode). With cluster set the port's cluster bus
// (port+10000) is checked free too.
func StartRedis(dir string, cluster bool, extra ...string) (*RedisServer, error) {
	s, err := redistest.Launch(redistest.Options{Dir: dir, ClusterBus: cluster, Args: extra})
	if err != nil {
		return nil, err
	}
	return &RedisServer{srv: s}, nil
}

// Addr is the server's host:port.
func (s *RedisServer) Addr() string { return s.srv.Addr() }

// Kill sends SIGKILL and waits: a crash. The server stays down until
// Restart.
func (s *RedisServer) Kill() { s.srv.Kill() }

// Signal sends sig to the running server (e.g. SIGSTOP).
func (s *RedisServer) Signal(sig os.Signal) error { return s.srv.Signal(sig) }

// Restart kills the server if it runs and starts an empty one on the same
// port and directory, retrying while the port is released.
func (s *RedisServer) Restart() error { return s.srv.Relaunch() }

// Stop ends the server and waits for it.
func (s *RedisServer) Stop() { s.srv.Stop() }
