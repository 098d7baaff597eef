package etcdtest

import (
	"context"
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

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ServerEnv names the environment variable that selects the etcd server
// binary.
const ServerEnv = "HOSTLOOM_ETCD_SERVER"

// ErrNoServer is matched by the error of Launch when no server binary is
// found.
var ErrNoServer = errors.New("etcdtest: etcd server binary not found")

// startTimeout bounds how long a cluster may take to serve a linearizable
// read; stopTimeout how long a member may take to stop after SIGTERM.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 10 * time.Second
)

// Required reports whether the etcd tests must run rather than skip: the
// environment variable CI is non-empty or HOSTLOOM_REQUIRE_ETCD is 1.
func Required() bool {
	return os.Getenv("CI") != "" || os.Getenv("HOSTLOOM_REQUIRE_ETCD") == "1"
}

// Binary returns the etcd server binary: $HOSTLOOM_ETCD_SERVER, else etcd
// on PATH. The error matches ErrNoServer.
func Binary() (string, error) {
	if p := os.Getenv(ServerEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: %s=%q: %w", ErrNoServer, ServerEnv, p, err)
		}
		return p, nil
	}
	p, err := exec.LookPath("etcd")
	if err != nil {
		return "", fmt.Errorf("%w: set %s or put etcd on PATH (see the package documentation for how to build it)", ErrNoServer, ServerEnv)
	}
	return p, nil
}

// Options configures Launch. The zero value is three members with the
// package's timings.
type Options struct {
	// Members is the number of members (default 3).
	Members int
	// HeartbeatInterval and ElectionTimeout are the members' raft timings
	// (default 50ms and 500ms: one-second leases are possible).
	HeartbeatInterval, ElectionTimeout time.Duration
	// Bin is the server binary (default Binary()).
	Bin string
	// PeerProxy routes the members' peer traffic through proxies in the
	// calling process, so that Member.Isolate can cut a member off from
	// the others (a network partition) while clients still reach it.
	// Linux only (the proxies learn which member opened a connection from
	// /proc); elsewhere Launch returns an error.
	PeerProxy bool
}

// Cluster is a private etcd cluster. Its methods are safe for concurrent
// use.
type Cluster struct {
	dir     string
	members []*Member
	net     *peerNet // nil without Options.PeerProxy
}

// Member is one etcd server process of a Cluster.
type Member struct {
	name      string
	clientURL string
	dir       string
	args      []string
	bin       string
	net       *peerNet // nil without Options.PeerProxy

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited and been reaped
	paused bool
}

// TB is the part of testing.TB the package uses, so that it does not link
// package testing into binaries that start clusters.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Start launches a cluster with options o (see Launch) and stops it when
// tb's test ends. Without a server binary it skips tb, or fails it when
// Required.
func Start(tb TB, o Options) *Cluster {
	tb.Helper()
	c, err := Launch(o)
	if errors.Is(err, ErrNoServer) && !Required() {
		tb.Skipf("%v (set CI=1 or HOSTLOOM_REQUIRE_ETCD=1 to make this a failure)", err)
	}
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// Launch starts a cluster and waits until it serves a linearizable read.
// The caller stops it with Stop.
func Launch(o Options) (*Cluster, error) {
	if o.Members <= 0 {
		o.Members = 3
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 50 * time.Millisecond
	}
	if o.ElectionTimeout <= 0 {
		o.ElectionTimeout = 500 * time.Millisecond
	}
	if o.PeerProxy && !peerProxySupported {
		return nil, errors.New("etcdtest: Options.PeerProxy needs Linux (/proc)")
	}
	bin := o.Bin
	if bin == "" {
		var err error
		if bin, err = Binary(); err != nil {
			return nil, err
		}
	}
	var lastErr error
	for range 3 { // another process may take a free port in between
		c, err := launch(bin, o)
		if err == nil {
			return c, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func launch(bin string, o Options) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "etcdtest-")
	if err != nil {
		return nil, fmt.Errorf("etcdtest: temp dir: %w", err)
	}
	// Per member: client, peer and (with PeerProxy) the peer proxy's port.
	ports, err := freePorts(3 * o.Members)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	c := &Cluster{dir: dir}
	if o.PeerProxy {
		c.net = newPeerNet()
	}
	// advertised is the peer URL the others dial: the proxy's with
	// PeerProxy, else the member's own.
	advertised := func(i int) string {
		if o.PeerProxy {
			return fmt.Sprintf("http://127.0.0.1:%d", ports[3*i+2])
		}
		return fmt.Sprintf("http://127.0.0.1:%d", ports[3*i+1])
	}
	var initial []string
	for i := range o.Members {
		initial = append(initial, fmt.Sprintf("m%d=%s", i, advertised(i)))
	}
	for i := range o.Members {
		name := fmt.Sprintf("m%d", i)
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[3*i])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[3*i+1])
		mdir := filepath.Join(dir, name)
		m := &Member{name: name, clientURL: client, dir: mdir, bin: bin, net: c.net, args: []string{
			"--name", name,
			"--data-dir", filepath.Join(mdir, "data"),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", advertised(i),
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", filepath.Base(dir),
			"--heartbeat-interval", strconv.FormatInt(o.HeartbeatInterval.Milliseconds(), 10),
			"--election-timeout", strconv.FormatInt(o.ElectionTimeout.Milliseconds(), 10),
			"--unsafe-no-fsync",
			// NewClient's clients probe every second (the default minimum,
			// 5s, would make the member close their connections).
			"--grpc-keepalive-min-time", "500ms",
			"--log-level", "warn",
		}}
		if err := os.MkdirAll(mdir, 0o700); err != nil {
			c.Stop()
			return nil, fmt.Errorf("etcdtest: %w", err)
		}
		if c.net != nil {
			if err := c.net.listen(m, strings.TrimPrefix(advertised(i), "http://"), strings.TrimPrefix(peer, "http://")); err != nil {
				c.Stop()
				return nil, err
			}
		}
		if err := m.start(); err != nil {
			c.Stop()
			return nil, err
		}
		c.members = append(c.members, m)
	}
	if err := c.WaitReady(startTimeout); err != nil {
		logs := c.logs()
		c.Stop()
		return nil, fmt.Errorf("%w\n%s", err, logs)
	}
	return c, nil
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("etcdtest: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Endpoints returns the members' client URLs.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.clientURL
	}
	return eps
}

// Members returns the members, in the order of Endpoints.
func (c *Cluster) Members() []*Member { return c.members }

// Client returns a new client of every member (quiet: its logger is a
// no-op). The caller closes it.
func (c *Cluster) Client() (*clientv3.Client, error) {
	return NewClient(c.Endpoints()...)
}

// ClientBut returns a new client of every member but m (quiet, as
// Client): a client that keeps working while m is paused, killed or cut
// off, as one of an application whose own links stay healthy. The caller
// closes it.
func (c *Cluster) ClientBut(m *Member) (*clientv3.Client, error) {
	var eps []string
	for _, o := range c.members {
		if o != m {
			eps = append(eps, o.clientURL)
		}
	}
	return NewClient(eps...)
}

// RootPassword is the password EnableAuth gives the root user.
const RootPassword = "root-pw"

// EnableAuth turns authentication on in c: a root user (RootPassword)
// and user, with password, allowed to read and write every key under
// prefix and nothing else. A client without credentials is refused from
// then on. It is for tests of credentials; a cluster keeps it until it
// stops.
func (c *Cluster) EnableAuth(ctx context.Context, user, password, prefix string) error {
	root, err := c.Client()
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	steps := []struct {
		what string
		do   func() error
	}{
		{"add user root", func() error { _, err := root.UserAdd(ctx, "root", RootPassword); return err }},
		{"grant role root", func() error { _, err := root.UserGrantRole(ctx, "root", "root"); return err }},
		{"add user " + user, func() error { _, err := root.UserAdd(ctx, user, password); return err }},
		{"add role " + user, func() error { _, err := root.RoleAdd(ctx, user); return err }},
		{"grant " + prefix + " to role " + user, func() error {
			_, err := root.RoleGrantPermission(ctx, user, prefix, clientv3.GetPrefixRangeEnd(prefix), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		}},
		{"grant role " + user + " to user " + user, func() error { _, err := root.UserGrantRole(ctx, user, user); return err }},
		{"enable authentication", func() error { _, err := root.AuthEnable(ctx); return err }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			return fmt.Errorf("etcdtest: %s: %w", st.what, err)
		}
	}
	return nil
}

// NewClient returns a quiet client of endpoints with a short dial timeout
// and keep-alive probes every second, so a paused member's connection is
// found dead within seconds.
func NewClient(endpoints ...string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 2 * time.Second,
		// Find a paused member's connection dead within seconds.
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.NewNop(),
	})
}

// WaitReady waits up to timeout until a linearizable read succeeds through
// every running, unpaused member.
func (c *Cluster) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, m := range c.members {
		if !m.Running() || m.Paused() || m.Isolated() {
			continue
		}
		cl, err := NewClient(m.clientURL)
		if err != nil {
			return fmt.Errorf("etcdtest: client of %s: %w", m.name, err)
		}
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err = cl.Get(ctx, "etcdtest-ready")
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				_ = cl.Close()
				return fmt.Errorf("etcdtest: member %s not ready after %v: %w", m.name, timeout, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		_ = cl.Close()
	}
	return nil
}

// Leader returns the member the running members report as the raft
// leader (paused and isolated members are not asked).
func (c *Cluster) Leader(ctx context.Context) (*Member, error) {
	cl, err := c.Client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	for {
		for _, m := range c.members {
			if !m.Running() || m.Paused() || m.Isolated() {
				continue
			}
			st, err := cl.Status(ctx, m.clientURL)
			if err != nil || st.Leader == 0 {
				continue
			}
			for _, n := range c.members {
				if !n.Running() || n.Paused() {
					continue
				}
				ns, err := cl.Status(ctx, n.clientURL)
				if err == nil && ns.Header.MemberId == st.Leader {
					return n, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("etcdtest: no leader: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop stops every member and removes the cluster's directory. It is safe
// to call more than once.
func (c *Cluster) Stop() {
	var wg sync.WaitGroup
	for _, m := range c.members {
		wg.Go(m.stop)
	}
	wg.Wait()
	if c.net != nil {
		c.net.close()
	}
	_ = os.RemoveAll(c.dir)
}

// logs returns the tail of every member's log, for a failed start.
func (c *Cluster) logs() string {
	var b strings.Builder
	for _, m := range c.members {
		out, _ := os.ReadFile(filepath.Join(m.dir, "log"))
		if len(out) > 4000 {
			out = out[len(out)-4000:]
		}
		fmt.Fprintf(&b, "--- %s log:\n%s\n", m.name, out)
	}
	return b.String()
}

// Name is the member's name (m0, m1, …).
func (m *Member) Name() string { return m.name }

// Endpoint is the member's client URL.
func (m *Member) Endpoint() string { return m.clientURL }

// pid is the process id of the member's current process, 0 when none
// was started.
func (m *Member) pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil || m.cmd.Process == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Isolate cuts the member off from the other members: its peer
// connections, both ways, are closed and new ones refused until Rejoin.
// Clients still reach it (a member cut off from the others cannot serve
// a linearizable request, so they wait or move to another member). It
// needs Options.PeerProxy.
func (m *Member) Isolate() error {
	if m.net == nil {
		return errNoPeerProxy
	}
	m.net.isolate(m, true)
	return nil
}

// Rejoin ends Isolate: the member's peers connect to it again.
func (m *Member) Rejoin() error {
	if m.net == nil {
		return errNoPeerProxy
	}
	m.net.isolate(m, false)
	return nil
}

// Isolated reports whether the member is cut off by Isolate.
func (m *Member) Isolated() bool { return m.net != nil && m.net.isIsolated(m) }

// start runs the member's process; m.mu must not be held.
func (m *Member) start() error {
	out, err := os.OpenFile(filepath.Join(m.dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("etcdtest: log of %s: %w", m.name, err)
	}
	cmd := exec.Command(m.bin, m.args...)
	cmd.Dir = m.dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("etcdtest: start %s: %w", m.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(done)
	}()
	m.mu.Lock()
	m.cmd, m.done, m.paused = cmd, done, false
	m.mu.Unlock()
	return nil
}

// Running reports whether the member's process runs (paused or not).
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// Paused reports whether the member is stopped by Pause.
func (m *Member) Paused() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.paused
}

// signal sends sig to the running process.
func (m *Member) signal(sig syscall.Signal) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return fmt.Errorf("etcdtest: %s is not running", m.name)
	}
	select {
	case <-m.done:
		return fmt.Errorf("etcdtest: %s is not running", m.name)
	default:
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("etcdtest: signal %v to %s: %w", sig, m.name, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		m.paused = true
	case syscall.SIGCONT:
		m.paused = false
	}
	return nil
}

// Pause freezes the member (SIGSTOP): it neither answers clients nor takes
// part in raft until Resume.
func (m *Member) Pause() error { return m.signal(syscall.SIGSTOP) }

// Resume continues a paused member (SIGCONT).
func (m *Member) Resume() error { return m.signal(syscall.SIGCONT) }

// Kill ends the member at once (SIGKILL) and waits until it is reaped. Its
// data is kept for Restart.
func (m *Member) Kill() {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a paused process dies only once continued on some kernels
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Restart starts a killed or stopped member again on its ports and data.
func (m *Member) Restart() error {
	if m.Running() {
		return fmt.Errorf("etcdtest: restart %s: still running", m.name)
	}
	return m.start()
}

// stop ends the process (SIGTERM, then SIGKILL after stopTimeout).
func (m *Member) stop() {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(stopTimeout):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}
