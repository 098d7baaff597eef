package redistest

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartClusterWithReplicas is StartCluster with replicas replicas per
// master (redis-cli --cluster create --cluster-replicas), for failover
// tests. It waits until every node reports cluster_state:ok, knows every
// node, and every replica's link to its master is up. The nodes stop when
// tb's test ends.
func StartClusterWithReplicas(tb testing.TB, masters, replicas int) *Cluster {
	tb.Helper()
	if masters < 3 || replicas < 1 {
		tb.Fatalf("redistest: StartClusterWithReplicas needs at least 3 masters and 1 replica each, got %d and %d", masters, replicas)
	}
	bin := requireBinary(tb)
	if _, err := CLIBinary(); err != nil {
		if Required() {
			tb.Fatalf("%v (the Redis tests are required here)", err)
		}
		tb.Skip("redis-cli not found: install redis-tools to run the Redis Cluster tests")
	}
	c, err := LaunchCluster(ClusterOptions{Masters: masters, ReplicasPerMaster: replicas, Bin: bin})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// NodeByAddr returns the node listening on addr (host:port), or nil.
func (c *Cluster) NodeByAddr(addr string) *Server {
	for _, n := range c.nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// ReplicaOf returns a node that currently replicates master, failing tb
// when there is none.
func (c *Cluster) ReplicaOf(tb testing.TB, master *Server) *Server {
	tb.Helper()
	ctx := context.Background()
	for _, n := range c.nodes {
		if n == master {
			continue
		}
		cl := n.NewClient()
		repl, err := cl.Info(ctx, "replication").Result()
		_ = cl.Close()
		if err == nil && strings.Contains(repl, "role:slave") &&
			strings.Contains(repl, "master_port:"+strconv.Itoa(master.Port())+"\r\n") {
			return n
		}
	}
	tb.Fatalf("redistest: no replica of %s", master.Addr())
	return nil
}

// FailoverLosingWrites promotes replica to master of its shard so that
// the writes write makes on master are lost, like a failover to a replica
// that missed them: it stops replica (SIGSTOP), closes master's link to it
// (CLIENT KILL TYPE replica), runs write, sends CLUSTER FAILOVER TAKEOVER
// to the replica and resumes it (SIGCONT). The replica can reconnect only
// on a later cron tick, by which time it is master already. It then waits
// like Takeover. The old master becomes a replica of the new one and drops
// the writes too.
func (c *Cluster) FailoverLosingWrites(tb testing.TB, master, replica *Server, write func()) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	mc := master.NewClient()
	defer mc.Close()
	rc := replica.NewClient()
	defer rc.Close()
	if err := rc.Ping(ctx).Err(); err != nil { // connect before the stop
		tb.Fatalf("redistest: PING %s: %v", replica.Addr(), err)
	}
	replica.signal(tb, syscall.SIGSTOP)
	resumed := false
	defer func() {
		if !resumed {
			replica.signal(tb, syscall.SIGCONT)
		}
	}()
	if err := mc.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		tb.Fatalf("redistest: CLIENT KILL TYPE replica on %s: %v", master.Addr(), err)
	}
	write()
	done := make(chan error, 1)
	go func() { done <- rc.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err() }()
	// The command must be in the replica's socket before it resumes, so
	// that it runs in the same event loop pass as the closed link.
	time.Sleep(50 * time.Millisecond)
	replica.signal(tb, syscall.SIGCONT)
	resumed = true
	if err := <-done; err != nil {
		tb.Fatalf("redistest: CLUSTER FAILOVER TAKEOVER on %s: %v", replica.Addr(), err)
	}
	c.waitMaster(tb, ctx, rc, replica)
}

// signal sends sig to the server process.
func (s *Server) signal(tb testing.TB, sig syscall.Signal) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		tb.Fatalf("redistest: %s is not running", s.addr)
	}
	if err := s.proc.cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("redistest: signal %v to %s: %v", sig, s.addr, err)
	}
}

// Takeover makes replica the master of its shard at once (CLUSTER FAILOVER
// TAKEOVER: no agreement with the old master or the other masters, so
// writes the replica has not received are lost) and waits until it reports
// itself master and every node reports cluster_state:ok.
func (c *Cluster) Takeover(tb testing.TB, replica *Server) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	cl := replica.NewClient()
	defer cl.Close()
	if err := cl.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		tb.Fatalf("redistest: CLUSTER FAILOVER TAKEOVER on %s: %v", replica.Addr(), err)
	}
	c.waitMaster(tb, ctx, cl, replica)
}

// waitMaster waits until replica (through cl) reports itself master and
// every node reports cluster_state:ok.
func (c *Cluster) waitMaster(tb testing.TB, ctx context.Context, cl *redis.Client, replica *Server) {
	tb.Helper()
	for {
		role, err := cl.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" && c.allOK(ctx) {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("redistest: %s did not become master: %v %v", replica.Addr(), role, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// allOK reports whether every running node reports cluster_state:ok.
func (c *Cluster) allOK(ctx context.Context) bool {
	for _, n := range c.nodes {
		if !n.Running() {
			continue
		}
		cl := n.NewClient()
		info, err := cl.ClusterInfo(ctx).Result()
		_ = cl.Close()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
	}
	return true
}

// MasterClientAddr returns the address of a *redis.Client obtained from a
// cluster client (for example ClusterClient.MasterForKey), to find its
// Server with NodeByAddr.
func MasterClientAddr(c *redis.Client) string { return c.Options().Addr }

// StartReplicated starts a primary and one replica of it and returns once
// the replica's link is up (INFO replication: master_link_status:up),
// failing tb after ten seconds.
func StartReplicated(tb testing.TB) (primary, replica *Server) {
	tb.Helper()
	primary, replica = Start(tb), Start(tb)
	ctx := context.Background()
	rc := replica.Client(tb)
	host, port, _ := strings.Cut(primary.Addr(), ":")
	if err := rc.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		tb.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return primary, replica
		}
		if time.Now().After(deadline) {
			tb.Fatalf("replica not in sync: %v %s", err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
