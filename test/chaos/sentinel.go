//go:build unix

package chaos

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/testing/redistest"
)

// Sentinel fault kinds.
const (
	// FaultSentinelFailover runs SENTINEL FAILOVER: the replica is
	// promoted at once, without waiting for it to catch up.
	FaultSentinelFailover FaultKind = "sentinel-failover"
	// FaultSentinelKillMaster kills the master so the sentinels promote
	// the replica; the old master comes back empty and is turned into a
	// replica.
	FaultSentinelKillMaster FaultKind = "sentinel-kill-master"
	// FaultSentinelLagKillMaster stops the replica (SIGSTOP) for one
	// lease, so the leaders' renewals and acquisitions meanwhile reach the
	// master only, then kills the master and resumes the replica, which
	// the sentinels promote: it has lost everything written while it was
	// stopped. With locking.redis.min_replicas 1 nothing written then was
	// acknowledged, so no term relies on it. Healed when the set is whole
	// again (the old master back as a replica, in sync). Not drawn by
	// default: choose it with -faults.
	FaultSentinelLagKillMaster FaultKind = "sentinel-lag-kill-master"
)

// SentinelFaults are the fault kinds of a run over Sentinel.
var SentinelFaults = []FaultKind{FaultSentinelFailover, FaultSentinelKillMaster, FaultKill, FaultPause}

// sentinelKinds are every kind a Sentinel run can inject, the opt-in
// FaultSentinelLagKillMaster included.
var sentinelKinds = append([]FaultKind{FaultSentinelLagKillMaster}, SentinelFaults...)

// SentinelMaster is the master name the sentinels monitor.
const SentinelMaster = "chaos"

// sentinelDownAfter is down-after-milliseconds: how long the master may be
// unreachable before the sentinels fail it over.
const sentinelDownAfter = time.Second

// redisSentinel is a master, one replica and three sentinels on loopback.
type redisSentinel struct {
	data      []*RedisServer
	sentinels []*RedisServer
}

func startSentinelSet(dir string) (*redisSentinel, error) {
	rs := &redisSentinel{}
	master, err := StartRedis(dir, false)
	if err != nil {
		return nil, err
	}
	rs.data = append(rs.data, master)
	host, port, _ := strings.Cut(master.Addr(), ":")
	replica, err := StartRedis(dir, false, "--replicaof", host, port)
	if err != nil {
		rs.stop()
		return nil, err
	}
	rs.data = append(rs.data, replica)
	for range 3 {
		s, err := redistest.LaunchSentinel(redistest.SentinelOptions{Master: master.Addr(), Name: SentinelMaster, Quorum: 2,
			DownAfter: sentinelDownAfter, FailoverTimeout: 10 * time.Second, Dir: dir})
		if err != nil {
			rs.stop()
			return nil, err
		}
		rs.sentinels = append(rs.sentinels, &RedisServer{srv: s})
	}
	if err := rs.waitReady(context.Background(), 30*time.Second); err != nil {
		rs.stop()
		return nil, err
	}
	return rs, nil
}

func (rs *redisSentinel) sentinelAddrs() []string {
	a := make([]string, len(rs.sentinels))
	for i, s := range rs.sentinels {
		a[i] = s.Addr()
	}
	return a
}

func (rs *redisSentinel) stop() {
	for _, s := range rs.sentinels {
		s.Stop()
	}
	for _, s := range rs.data {
		s.Stop()
	}
}

func (rs *redisSentinel) node(addr string) *RedisServer {
	for _, n := range rs.data {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// masterAddr asks the sentinels for the current master.
func (rs *redisSentinel) masterAddr(ctx context.Context) (string, error) {
	var last error
	for _, s := range rs.sentinels {
		cl := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1})
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		a, err := cl.GetMasterAddrByName(cctx, SentinelMaster).Result()
		cancel()
		_ = cl.Close()
		if err == nil && len(a) == 2 {
			return a[0] + ":" + a[1], nil
		}
		last = err
	}
	return "", fmt.Errorf("chaos: no sentinel knows the master: %v", last)
}

// waitReady waits until every sentinel agrees on the master, sees the
// replica and the other sentinels, and the replica is in sync.
func (rs *redisSentinel) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) && ctx.Err() == nil {
		last = rs.notReady(ctx)
		if last == "" {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("chaos: sentinel set not ready after %v: %s", timeout, last)
}

// notReady returns why the set is not ready, "" when it is.
func (rs *redisSentinel) notReady(ctx context.Context) string {
	master, err := rs.masterAddr(ctx)
	if err != nil {
		return err.Error()
	}
	for _, s := range rs.sentinels {
		cl := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1})
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fields, err := cl.Master(cctx, SentinelMaster).Result()
		cancel()
		_ = cl.Close()
		if err != nil {
			return fmt.Sprintf("sentinel %s: %v", s.Addr(), err)
		}
		if fields["ip"]+":"+fields["port"] != master || fields["num-slaves"] != "1" || fields["num-other-sentinels"] != "2" || strings.Contains(fields["flags"], "down") {
			return fmt.Sprintf("sentinel %s: %v", s.Addr(), fields)
		}
	}
	for _, n := range rs.data {
		if n.Addr() == master {
			continue
		}
		info, err := nodeCmd(ctx, n.Addr(), "INFO", "replication")
		if err != nil || !strings.Contains(info, "role:slave") || !strings.Contains(info, "master_link_status:up") ||
			!strings.Contains(info, "master_port:"+master[strings.LastIndex(master, ":")+1:]) {
			return fmt.Sprintf("replica %s not in sync with %s (%v)", n.Addr(), master, err)
		}
	}
	return ""
}

// sentinelFault fails the master over, by command or by killing it, and
// waits until the sentinels name the promoted replica.
func (r *run) sentinelFault(ctx context.Context, f *Fault) error {
	old, err := r.sentinel.masterAddr(ctx)
	if err != nil {
		return err
	}
	f.LostState, f.Unavailable = true, true
	f.Start = time.Now()
	switch f.Kind {
	case FaultSentinelFailover:
		r.stats.Failovers++
		if _, err := nodeCmd(ctx, r.sentinel.sentinels[r.rng.IntN(len(r.sentinel.sentinels))].Addr(), "SENTINEL", "FAILOVER", SentinelMaster); err != nil {
			return fmt.Errorf("SENTINEL FAILOVER: %w", err)
		}
	case FaultSentinelKillMaster:
		r.stats.KilledMasters++
		node := r.sentinel.node(old)
		node.Kill()
		defer func() {
			if err := node.Restart(); err != nil {
				r.logf("chaos: restart %s: %v", old, err)
			}
		}()
	case FaultSentinelLagKillMaster:
		r.stats.KilledMasters++
		var replica *RedisServer
		for _, n := range r.sentinel.data {
			if n.Addr() != old {
				replica = n
			}
		}
		if err := replica.Signal(syscall.SIGSTOP); err != nil {
			return fmt.Errorf("SIGSTOP replica: %w", err)
		}
		time.Sleep(r.cfg.Lease) // renewals and acquisitions reach the master only
		node := r.sentinel.node(old)
		node.Kill()
		if err := replica.Signal(syscall.SIGCONT); err != nil {
			return fmt.Errorf("SIGCONT replica: %w", err)
		}
		defer func() {
			if err := node.Restart(); err != nil {
				r.logf("chaos: restart %s: %v", old, err)
			}
			// Nobody can lead with min_replicas until the old master
			// serves as a replica again: that is the heal.
			if err := r.sentinel.waitReady(ctx, 60*time.Second); err != nil {
				r.logf("chaos: %v", err)
			}
			f.Heal = time.Now()
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		now, err := r.sentinel.masterAddr(ctx)
		if err == nil && now != old {
			role, err := nodeCmd(ctx, now, "ROLE")
			if err == nil && strings.HasPrefix(role, "[master") {
				f.Heal = time.Now()
				f.Detail = fmt.Sprintf("master %s -> %s", old, now)
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("no failover from %s after 30s", old)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sentinelArgs are the replica program's flags for a Sentinel run.
func (rs *redisSentinel) replicaAddrs() string { return strings.Join(rs.sentinelAddrs(), ",") }
