package redistest

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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoServer reports that redis-server is not on PATH.
var ErrNoServer = errors.New("redistest: redis-server not found on PATH: install redis-server to run the Redis tests")

// skipMessage is the message of a test skipped for lack of redis-server.
const skipMessage = "redis-server not found: install redis-server to run the Redis tests"

// startTimeout bounds how long a server may take to answer PING.
const startTimeout = 10 * time.Second

// Required reports whether the Redis tests must run rather than skip: the
// environment variable CI is non-empty or HOSTLOOM_REQUIRE_REDIS is 1.
func Required() bool {
	return os.Getenv("CI") != "" || os.Getenv("HOSTLOOM_REQUIRE_REDIS") == "1"
}

// Server is a private redis-server process. Its methods are safe for
// concurrent use.
type Server struct {
	bin      string
	port     int
	addr     string
	dir      string
	ownDir   bool
	extraArg []string
	config   string // config file written before every launch (Sentinel)

	mu   sync.Mutex
	proc *process // nil once stopped
}

// process is one run of redis-server.
type process struct {
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed when the process has exited and been reaped
}

// ServerEnv names the environment variable that selects the server binary
// (for example /usr/bin/valkey-server); by default redis-server, then
// valkey-server, is looked up on PATH.
const ServerEnv = "HOSTLOOM_REDIS_SERVER"

// CLIEnv names the environment variable that selects the CLI used to create
// clusters; by default redis-cli, then valkey-cli.
const CLIEnv = "HOSTLOOM_REDIS_CLI"

// lookPath finds the server binary.
func lookPath() (string, error) {
	return find(ServerEnv, ErrNoServer, "redis-server", "valkey-server")
}

// find returns the binary env names, or the first of names on PATH.
func find(env string, notFound error, names ...string) (string, error) {
	if v := os.Getenv(env); v != "" {
		bin, err := exec.LookPath(v)
		if err != nil {
			return "", fmt.Errorf("redistest: %s=%q: %w", env, v, err)
		}
		// Absolute: the server runs in its own directory, where a relative
		// path (../shared/bin/valkey-server) would not resolve.
		if bin, err = filepath.Abs(bin); err != nil {
			return "", fmt.Errorf("redistest: %s=%q: %w", env, v, err)
		}
		return bin, nil
	}
	for _, n := range names {
		if bin, err := exec.LookPath(n); err == nil {
			return bin, nil
		}
	}
	return "", notFound
}

// requireBinary returns redis-server's path, or skips or fails tb.
func requireBinary(tb testing.TB) string {
	tb.Helper()
	bin, err := lookPath()
	if err != nil && !errors.Is(err, ErrNoServer) {
		tb.Fatal(err) // a misconfigured HOSTLOOM_REDIS_SERVER is never skipped
	}
	if err != nil {
		if Required() {
			tb.Fatalf("%v (the Redis tests are required here: CI or HOSTLOOM_REQUIRE_REDIS=1 is set)", err)
		}
		tb.Skip(skipMessage)
	}
	return bin
}

// Start launches a redis-server on 127.0.0.1 at a random free port, waits
// until it answers PING and stops it when tb's test ends. Without
// redis-server on PATH it skips tb, or fails it when Required.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := requireBinary(tb)
	s, err := Launch(Options{Bin: bin})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// StartMain launches a redis-server like Start, for TestMain and other code
// without a testing.TB. stop ends the server and removes its directory; it is
// safe to call more than once. err wraps ErrNoServer when redis-server is not
// on PATH; the caller decides whether to skip (see Required).
func StartMain() (s *Server, stop func(), err error) {
	s, err = Launch(Options{})
	if err != nil {
		return nil, nil, err
	}
	return s, s.Stop, nil
}

// Options configure a server started by Launch. The zero value is what
// Start uses.
type Options struct {
	// Bin is the server binary, a path or a name looked up on PATH. Empty
	// (the default) means ServerBinary: HOSTLOOM_REDIS_SERVER, else
	// redis-server, else valkey-server.
	Bin string
	// Args are appended to the server's command line, for example
	// "--replicaof", host, port or "--maxclients", "20000".
	Args []string
	// ClusterBus also requires the cluster bus port (port+10000) to be
	// free, for a node started with "--cluster-enabled", "yes".
	ClusterBus bool
	// Dir, when set, is the directory under which the server gets a
	// directory of its own (log, cluster config), kept after Stop for a
	// post-mortem. Empty (the default) means a temporary directory that
	// Stop removes.
	Dir string
}

// Launch starts a redis-server on 127.0.0.1 at a random free port with
// persistence off, and waits until it answers PING. It is the launcher
// behind Start, for code without a testing.TB (TestMain, benchmarks, the
// chaos harness); the caller stops the server. err wraps ErrNoServer when
// no server binary is found.
func Launch(o Options) (*Server, error) {
	return launchNew(o, nil)
}

// ServerBinary returns the path of the server binary the launcher uses:
// HOSTLOOM_REDIS_SERVER when set, else redis-server, else valkey-server on
// PATH. err wraps ErrNoServer when none is found; a HOSTLOOM_REDIS_SERVER
// that does not name an executable is a different error.
func ServerBinary() (string, error) { return lookPath() }

// CLIBinary returns the path of the CLI used to create clusters:
// HOSTLOOM_REDIS_CLI when set, else redis-cli, else valkey-cli on PATH.
func CLIBinary() (string, error) {
	return find(CLIEnv, errors.New("redistest: redis-cli not found on PATH: install redis-tools for the Redis Cluster tests"), "redis-cli", "valkey-cli")
}

// launchNew picks a free port and launches a server on it, retrying when
// another process took the port in between. config, when not nil, returns
// the config file of the server on a given port (Sentinel).
func launchNew(o Options, config func(port int) string) (*Server, error) {
	bin := o.Bin
	var err error
	if bin == "" {
		bin, err = lookPath()
	} else if bin, err = exec.LookPath(bin); err == nil {
		bin, err = filepath.Abs(bin)
	}
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 {
		port, err := freePort(o.ClusterBus)
		if err != nil {
			return nil, err
		}
		var dir string
		if o.Dir == "" {
			dir, err = os.MkdirTemp("", "redistest-")
		} else {
			dir = filepath.Join(o.Dir, "redis-"+strconv.Itoa(port))
			err = os.MkdirAll(dir, 0o700)
		}
		if err != nil {
			return nil, fmt.Errorf("redistest: server dir: %w", err)
		}
		s := &Server{
			bin:      bin,
			port:     port,
			addr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			dir:      dir,
			ownDir:   o.Dir == "",
			extraArg: append([]string(nil), o.Args...),
		}
		if config != nil {
			s.config = config(port)
		}
		p, err := s.launch()
		if err == nil {
			s.proc = p
			return s, nil
		}
		lastErr = err
		if s.ownDir {
			_ = os.RemoveAll(dir)
		}
	}
	return nil, lastErr
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago. With
// cluster set, the cluster bus port (port+10000) must exist and be free too.
func freePort(cluster bool) (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !cluster {
			_ = l.Close()
			return port, nil
		}
		if port+10000 > 65535 {
			_ = l.Close()
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		_ = l.Close()
		if err != nil {
			continue
		}
		_ = bus.Close()
		return port, nil
	}
	return 0, errors.New("redistest: no free port pair for a cluster node")
}

// launch starts redis-server with s's settings and waits for PING.
func (s *Server) launch() (*process, error) {
	var args []string
	if s.config != "" {
		// Sentinel rewrites its config file: give it a fresh one.
		path := filepath.Join(s.dir, "sentinel.conf")
		if err := os.WriteFile(path, []byte(s.config), 0o600); err != nil {
			return nil, fmt.Errorf("redistest: sentinel config: %w", err)
		}
		args = append(args, path, "--sentinel")
	}
	args = append(args,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--daemonize", "no",
		"--logfile", "",
	)
	args = append(args, s.extraArg...)
	logFile, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("redistest: log file: %w", err)
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("redistest: start %s: %w", s.bin, err)
	}
	p := &process{cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	if err := WaitPing(s.addr, p.done); err != nil {
		p.kill()
		return nil, fmt.Errorf("redistest: redis-server on %s did not answer PING: %w; log:\n%s", s.addr, err, s.logTail())
	}
	return p, nil
}

// logTail returns the end of the server's log, for error messages.
func (s *Server) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

// WaitPing polls addr with a raw PING until it answers PONG, until exited
// is closed (the server process ended), or for 10 seconds. The launcher
// waits with it; it is exported for code that waits on a server it did not
// start here.
func WaitPing(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("process exited")
		default:
		}
		if lastErr = ping(addr); lastErr == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("timeout after %v: %w", startTimeout, lastErr)
}

// ping sends an inline PING and expects +PONG.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("unexpected reply %q", strings.TrimSpace(line))
	}
	return nil
}

// kill sends SIGKILL and waits until the process is reaped.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Addr is the server's host:port on 127.0.0.1.
func (s *Server) Addr() string { return s.addr }

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// Client returns a new client connected to the server, closed when tb's
// test ends.
func (s *Server) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	c := s.NewClient()
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// NewClient returns a new client connected to the server; the caller closes
// it.
func (s *Server) NewClient() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.addr})
}

// Kill ends the server with SIGKILL and waits for it, as a crash would. The
// server stays down until Restart. Kill on a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.kill()
		s.proc = nil
	}
}

// Restart kills the server if it runs and starts a new one on the same port
// with an empty data set (nothing is persisted). It fails tb when the new
// server does not answer PING.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	if err := s.Relaunch(); err != nil {
		tb.Fatal(err)
	}
}

// Relaunch is Restart for code without a testing.TB (the chaos harness):
// it kills the server if it runs and starts an empty one on the same port
// and with the same directory, and returns an error when the new server
// does not answer PING.
func (s *Server) Relaunch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.kill()
		s.proc = nil
	}
	// The port was ours a moment ago; retry for about two seconds in case
	// the kernel has not released it yet.
	var err error
	for range 40 {
		var p *process
		if p, err = s.launch(); err == nil {
			s.proc = p
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// Signal sends sig to the running server, for example SIGSTOP to freeze
// it and SIGCONT to resume it. It is an error when the server is down.
func (s *Server) Signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return fmt.Errorf("redistest: server on %s is not running", s.addr)
	}
	return s.proc.cmd.Process.Signal(sig)
}

// Dir is the server's working directory: its log (server.log) and, in
// cluster mode, its cluster config.
func (s *Server) Dir() string { return s.dir }

// Stop ends the server (SIGTERM, then SIGKILL after five seconds), waits for
// it and removes its directory. It is safe to call more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.proc; p != nil {
		s.proc = nil
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			p.kill()
		}
	}
	if s.ownDir {
		_ = os.RemoveAll(s.dir)
		s.ownDir = false
	}
}

// Running reports whether the server process is up (started and not yet
// stopped or killed).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return false
	}
	select {
	case <-s.proc.done:
		return false
	default:
		return true
	}
}

// Cluster is a Redis Cluster, each node a Server.
type Cluster struct {
	nodes   []*Server
	masters int
}

// clusterTimeout bounds how long a new cluster may take to converge.
const clusterTimeout = 30 * time.Second

// ClusterOptions configure a cluster started by LaunchCluster.
type ClusterOptions struct {
	// Masters is the number of masters, at least 3 (redis-cli --cluster
	// create demands it).
	Masters int
	// ReplicasPerMaster is the number of replicas of each master (0: none).
	ReplicasPerMaster int
	// NodeTimeout is cluster-node-timeout: how long a master may be
	// unreachable before a replica is promoted. Zero means 5s.
	NodeTimeout time.Duration
	// Bin and Dir are as in Options.
	Bin, Dir string
}

// StartCluster launches masters cluster-mode servers (at least 3, as
// redis-cli --cluster create demands), joins them with redis-cli --cluster
// create and waits until every node reports cluster_state:ok and knows
// every node and slot. The nodes stop when tb's test ends.
func StartCluster(tb testing.TB, masters int) *Cluster {
	tb.Helper()
	if masters < 3 {
		tb.Fatalf("redistest: StartCluster needs at least 3 masters, got %d", masters)
	}
	bin := requireBinary(tb)
	if _, err := CLIBinary(); err != nil {
		if Required() {
			tb.Fatalf("%v (the Redis tests are required here)", err)
		}
		tb.Skip("redis-cli not found: install redis-tools to run the Redis Cluster tests")
	}
	c, err := LaunchCluster(ClusterOptions{Masters: masters, Bin: bin})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// LaunchCluster starts a Redis Cluster of o.Masters masters with
// o.ReplicasPerMaster replicas each, joined with redis-cli --cluster create
// (see CLIBinary), and waits until it is healthy (see WaitHealthy). It is
// StartCluster for code without a testing.TB; the caller stops the
// cluster. err wraps ErrNoServer when no server binary is found.
func LaunchCluster(o ClusterOptions) (*Cluster, error) {
	if o.Masters < 3 {
		return nil, fmt.Errorf("redistest: a cluster needs at least 3 masters, got %d", o.Masters)
	}
	if o.ReplicasPerMaster < 0 {
		return nil, fmt.Errorf("redistest: ReplicasPerMaster %d is negative", o.ReplicasPerMaster)
	}
	timeout := o.NodeTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	cli, err := CLIBinary()
	if err != nil {
		return nil, err
	}
	c := &Cluster{masters: o.Masters}
	for range o.Masters * (1 + o.ReplicasPerMaster) {
		s, err := Launch(Options{
			Bin: o.Bin,
			Dir: o.Dir,
			Args: []string{
				"--cluster-enabled", "yes",
				"--cluster-config-file", "nodes.conf",
				"--cluster-node-timeout", strconv.FormatInt(timeout.Milliseconds(), 10),
			},
			ClusterBus: true,
		})
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.nodes = append(c.nodes, s)
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(o.ReplicasPerMaster), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redistest: redis-cli --cluster create: %w\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := c.WaitHealthy(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// WaitHealthy polls every node until all agree the cluster is whole — state
// ok, every slot served, every node known, as many shards as masters — and
// every replica's link to its master is up (a replica that has not synced
// cannot be promoted). It returns an error saying what is missing when ctx
// ends first.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	clients := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr(), DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1})
		defer clients[i].Close()
	}
	want := []string{
		"cluster_state:ok",
		"cluster_slots_ok:16384",
		"cluster_known_nodes:" + strconv.Itoa(len(c.nodes)),
		"cluster_size:" + strconv.Itoa(c.masters),
	}
	var last string
	for {
		if last = c.unhealthy(ctx, clients, want); last == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: cluster not healthy: %s (%w)", last, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// unhealthy returns why the cluster is not healthy, "" when it is.
func (c *Cluster) unhealthy(ctx context.Context, clients []*redis.Client, want []string) string {
	for i, cl := range clients {
		info, err := cl.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Sprintf("%s: %v", c.nodes[i].Addr(), err)
		}
		for _, w := range want {
			if !strings.Contains(info, w) {
				return fmt.Sprintf("%s: missing %s in:\n%s", c.nodes[i].Addr(), w, info)
			}
		}
		repl, err := cl.Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Sprintf("%s: %v", c.nodes[i].Addr(), err)
		}
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return fmt.Sprintf("%s: replica not in sync with its master", c.nodes[i].Addr())
		}
	}
	return ""
}

// Nodes returns the cluster's servers.
func (c *Cluster) Nodes() []*Server { return append([]*Server(nil), c.nodes...) }

// Node returns the node listening on addr, or nil.
func (c *Cluster) Node(addr string) *Server {
	for _, n := range c.nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// Addrs returns the host:port of every node.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Client returns a new cluster client over all nodes, closed when tb's test
// ends.
func (c *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	tb.Cleanup(func() { _ = cl.Close() })
	return cl
}

// Stop ends every node. It is safe to call more than once.
func (c *Cluster) Stop() {
	for _, n := range c.nodes {
		n.Stop()
	}
}

// SentinelMaster is the master name StartSentinel monitors.
const SentinelMaster = "hostloom"

// SentinelOptions configure a Sentinel started by LaunchSentinel.
type SentinelOptions struct {
	// Master is the monitored master's host:port.
	Master string
	// Name is the master's name (default SentinelMaster).
	Name string
	// Quorum is how many sentinels must agree the master is down
	// (default 1).
	Quorum int
	// DownAfter is down-after-milliseconds (default 1s).
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout (default: Sentinel's own, 3m).
	FailoverTimeout time.Duration
	// Bin and Dir are as in Options.
	Bin, Dir string
}

// LaunchSentinel starts a Redis Sentinel (the server binary with
// --sentinel) on a random free port monitoring o.Master. It returns once
// the Sentinel answers PING; it does not wait for the Sentinel to discover
// replicas or other sentinels. The caller stops it.
func LaunchSentinel(o SentinelOptions) (*Server, error) {
	host, port, err := net.SplitHostPort(o.Master)
	if err != nil {
		return nil, fmt.Errorf("redistest: sentinel master %q: %w", o.Master, err)
	}
	name := o.Name
	if name == "" {
		name = SentinelMaster
	}
	quorum := o.Quorum
	if quorum <= 0 {
		quorum = 1
	}
	downAfter := o.DownAfter
	if downAfter <= 0 {
		downAfter = time.Second
	}
	return launchNew(Options{Bin: o.Bin, Dir: o.Dir}, func(p int) string {
		conf := fmt.Sprintf("port %d\nbind 127.0.0.1\nsentinel monitor %s %s %s %d\nsentinel down-after-milliseconds %s %d\n",
			p, name, host, port, quorum, name, downAfter.Milliseconds())
		if o.FailoverTimeout > 0 {
			conf += fmt.Sprintf("sentinel failover-timeout %s %d\n", name, o.FailoverTimeout.Milliseconds())
		}
		return conf
	})
}

// StartSentinel launches a Redis Sentinel (redis-server --sentinel) on a
// random free port monitoring master under the name SentinelMaster with a
// quorum of 1, and waits until it reports master's address. It stops when
// tb's test ends. Use it with redis.NewFailoverClient.
func StartSentinel(tb testing.TB, master *Server) *Server {
	tb.Helper()
	bin := requireBinary(tb)
	s, err := LaunchSentinel(SentinelOptions{Master: master.Addr(), Bin: bin})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
	defer sc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		addr, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
		if err == nil && len(addr) == 2 && net.JoinHostPort(addr[0], addr[1]) == master.Addr() {
			return s
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("redistest: sentinel on %s does not report master %s: %v %v", s.Addr(), master.Addr(), addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// FailoverClient returns a Sentinel-backed client (redis.NewFailoverClient)
// for the master the sentinels monitor, closed when tb's test ends.
func FailoverClient(tb testing.TB, sentinels ...*Server) *redis.Client {
	tb.Helper()
	addrs := make([]string, len(sentinels))
	for i, s := range sentinels {
		addrs[i] = s.Addr()
	}
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: SentinelMaster, SentinelAddrs: addrs})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}
