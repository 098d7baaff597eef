//go:build unix

package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/testing/redistest"
)

// ClusterFaults are the fault kinds of a run over Redis Cluster.
var ClusterFaults = []FaultKind{FaultFailover, FaultKillMaster, FaultKill, FaultPause}

// FaultClusterLagKillMaster stops the replica of a master that holds lock
// keys (SIGSTOP) and cuts its replication link, so the leaders' renewals
// and acquisitions meanwhile reach the master only; after lagStop (less
// than a lease: the replica missed renewals whose leases still run) it
// kills the master, resumes the replica and promotes it at once (CLUSTER
// FAILOVER TAKEOVER): it has lost everything written while it was
// stopped. With locking.redis.min_replicas 1 nothing written then was
// acknowledged, so no term relies on it. Healed when the cluster is whole
// again (the old master back as an in-sync replica: until then nobody can
// lead that master's roles with min_replicas). Not drawn by default:
// choose it with -faults (Redis Cluster runs only).
const FaultClusterLagKillMaster FaultKind = "cluster-lag-kill-master"

// lagStop is how long FaultClusterLagKillMaster keeps the replica stopped
// before the master is killed: half a renew interval short of a lease, so
// the replica missed at least one renewal of every term and, when it is
// promoted, holds keys whose deadlines (from renewals before the stop)
// have passed or are close while the clients' leases (from renewals
// during the stop) still run. At least one renew interval.
func lagStop(cfg Config) time.Duration {
	return max(cfg.Lease-cfg.RenewInterval/2, cfg.RenewInterval)
}

// clusterKinds are every kind a Cluster run can inject, the opt-in
// FaultClusterLagKillMaster included.
var clusterKinds = append([]FaultKind{FaultClusterLagKillMaster}, ClusterFaults...)

// FailoverStats measure what failovers of a replicated backend (Redis
// Cluster, Sentinel) do to leases. Replication is asynchronous: a master
// can acknowledge an acquisition or an extension and fail before its
// replica has it, so the promoted replica may not know a lease that a
// replica still relies on. Each such lost write that lets a second replica
// lead shows as a lost-state overlap.
type FailoverStats struct {
	// Backend is "cluster" or "sentinel".
	Backend string
	// Failovers and KilledMasters count the injected failover faults
	// (a commanded failover; a master killed so its replica is promoted).
	Failovers, KilledMasters int
	// FaultsWithOverlap counts the failover faults after which two
	// replicas led one role at once; Overlaps counts those overlaps.
	FaultsWithOverlap, Overlaps int
	// LongestOverlap is the longest of them.
	LongestOverlap time.Duration
}

// String is the one-line failover summary.
func (s *FailoverStats) String() string {
	return fmt.Sprintf("%s: %d commanded failovers, %d masters killed; %d of %d failover faults lost a lease (%d role overlaps, longest %v)",
		s.Backend, s.Failovers, s.KilledMasters, s.FaultsWithOverlap, s.Failovers+s.KilledMasters, s.Overlaps, s.LongestOverlap)
}

func (s *FailoverStats) fill(rep *Report) {
	seen := map[string]bool{}
	for _, o := range rep.LostStateOverlaps {
		if !strings.Contains(o.Fault, "failover") && !strings.Contains(o.Fault, "kill-master") {
			continue
		}
		s.Overlaps++
		s.LongestOverlap = max(s.LongestOverlap, o.Length)
		if !seen[o.Fault] {
			seen[o.Fault] = true
			s.FaultsWithOverlap++
		}
	}
}

// redisCluster is 3 masters with one replica each, on loopback.
type redisCluster struct {
	*redistest.Cluster
}

// clusterNodeTimeout is cluster-node-timeout: how long a master may be
// unreachable before its replica is promoted.
const clusterNodeTimeout = 1000 * time.Millisecond

func startCluster(dir string) (*redisCluster, error) {
	c, err := redistest.LaunchCluster(redistest.ClusterOptions{Masters: 3, ReplicasPerMaster: 1, NodeTimeout: clusterNodeTimeout, Dir: dir})
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	return &redisCluster{c}, nil
}

func (c *redisCluster) addrs() []string { return c.Addrs() }

func (c *redisCluster) stop() { c.Stop() }

// waitOK waits until the cluster is whole again and every replica is in
// sync (a replica that has not synced cannot be promoted), or timeout.
func (c *redisCluster) waitOK(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.WaitHealthy(ctx)
}

// nodeCmd runs one command on one node and returns its reply as text.
func nodeCmd(ctx context.Context, addr string, args ...any) (string, error) {
	cl := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1})
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := cl.Do(cctx, args...).Result()
	if err != nil {
		return "", err
	}
	return fmt.Sprint(v), nil
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, master string
	isMaster, failed bool
}

func (c *redisCluster) topology(ctx context.Context, from string) ([]clusterNode, error) {
	out, err := nodeCmd(ctx, from, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	var nodes []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		nodes = append(nodes, clusterNode{id: f[0], addr: addr, master: f[3],
			isMaster: strings.Contains(f[2], "master"), failed: strings.Contains(f[2], "fail")})
	}
	return nodes, nil
}

// clusterFault fails over (or kills) the master that holds a random
// role's key, and waits until its replica has taken over.
func (r *run) clusterFault(ctx context.Context, f *Fault) error {
	var topo []clusterNode
	var err error
	for _, n := range r.cluster.Nodes() {
		if topo, err = r.cluster.topology(ctx, n.Addr()); err == nil {
			break
		}
	}
	if err != nil {
		return err
	}
	// Every master holds some roles' keys (20 keys over 3 masters): pick
	// one that has a healthy replica.
	type pair struct{ master, replica string }
	var pairs []pair
	for _, m := range topo {
		if !m.isMaster || m.failed {
			continue
		}
		for _, n := range topo {
			if n.master == m.id && !n.failed {
				pairs = append(pairs, pair{m.addr, n.addr})
				break
			}
		}
	}
	if len(pairs) == 0 {
		return errors.New("no master with a healthy replica in the topology")
	}
	p := pairs[r.rng.IntN(len(pairs))]
	masterAddr, replicaAddr := p.master, p.replica
	var held []string
	for i := range r.cfg.Roles {
		if m, err := r.client.(*redis.ClusterClient).MasterForKey(ctx, LockKey(RoleName(i))); err == nil && m.Options().Addr == masterAddr {
			held = append(held, RoleName(i))
		}
	}
	role := strings.Join(held, ",")
	f.LostState, f.Unavailable = true, f.Kind != FaultFailover
	f.Detail = fmt.Sprintf("master %s (keys of %s) -> replica %s", masterAddr, role, replicaAddr)
	f.Start = time.Now()
	switch f.Kind {
	case FaultFailover:
		r.stats.Failovers++
		if _, err := nodeCmd(ctx, replicaAddr, "CLUSTER", "FAILOVER"); err != nil {
			return fmt.Errorf("CLUSTER FAILOVER on %s: %w", replicaAddr, err)
		}
	case FaultKillMaster:
		r.stats.KilledMasters++
		node := r.cluster.Node(masterAddr)
		node.Kill()
		defer func() {
			// The old master comes back empty and rejoins as a replica.
			if err := node.Relaunch(); err != nil {
				r.logf("chaos: restart %s: %v", masterAddr, err)
			}
		}()
	case FaultClusterLagKillMaster:
		r.stats.KilledMasters++
		replica := r.cluster.Node(replicaAddr)
		if err := replica.Signal(syscall.SIGSTOP); err != nil {
			return fmt.Errorf("SIGSTOP replica %s: %w", replicaAddr, err)
		}
		// On loopback a stopped replica still receives the replication
		// stream into its socket buffer and applies it on SIGCONT: cut
		// the link, so what the master acknowledges from now on never
		// reaches the replica, as when it lags behind a slow network.
		if _, err := nodeCmd(ctx, masterAddr, "CLIENT", "KILL", "TYPE", "replica"); err != nil {
			r.logf("chaos: CLIENT KILL TYPE replica on %s: %v", masterAddr, err)
		}
		sleep(ctx, lagStop(r.cfg)) // renewals and acquisitions reach the master only
		node := r.cluster.Node(masterAddr)
		node.Kill()
		if err := replica.Signal(syscall.SIGCONT); err != nil {
			return fmt.Errorf("SIGCONT replica %s: %w", replicaAddr, err)
		}
		// Promote at once, without the node timeout and the election:
		// the leases the replica missed are still running on the clients.
		if _, err := nodeCmd(ctx, replicaAddr, "CLUSTER", "FAILOVER", "TAKEOVER"); err != nil {
			r.logf("chaos: CLUSTER FAILOVER TAKEOVER on %s: %v", replicaAddr, err)
		}
		defer func() {
			if err := node.Relaunch(); err != nil {
				r.logf("chaos: restart %s: %v", masterAddr, err)
			}
			// Nobody can lead this master's roles with min_replicas until
			// the old master serves as a replica again: that is the heal.
			if err := r.cluster.waitOK(ctx, 60*time.Second); err != nil {
				r.logf("chaos: %v", err)
			}
			f.Heal = time.Now()
		}()
	}
	// The fault heals when the replica has become a master.
	deadline := time.Now().Add(10 * clusterNodeTimeout)
	for {
		role, err := nodeCmd(ctx, replicaAddr, "ROLE")
		if err == nil && strings.HasPrefix(role, "[master") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica %s not promoted after %v", replicaAddr, 10*clusterNodeTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		info, err := nodeCmd(ctx, replicaAddr, "CLUSTER", "INFO")
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster not ok on %s after %v", replicaAddr, 10*clusterNodeTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.Heal = time.Now()
	return nil
}

// settle waits, after a cluster fault, until the cluster is whole again
// and every replica is in sync, so the next fault can fail over.
func (r *run) settle(ctx context.Context) {
	var err error
	switch {
	case r.cluster != nil:
		err = r.cluster.waitOK(ctx, 30*time.Second)
	case r.sentinel != nil:
		err = r.sentinel.waitReady(ctx, 30*time.Second)
	}
	if err != nil {
		r.logf("chaos: %v", err)
	}
}
