package chaos

import (
	"fmt"
	"time"
)

// FaultKind names a fault the scheduler can inject.
type FaultKind string

// Fault kinds. Each is logged with its start and heal times.
const (
	// FaultKill sends SIGKILL to a leader, then restarts it as a new
	// incarnation.
	FaultKill FaultKind = "kill"
	// FaultPause sends SIGSTOP to a leader for longer than the lease, then
	// SIGCONT.
	FaultPause FaultKind = "pause"
	// FaultRedisRestart kills redis-server and starts an empty one on the
	// same port at once: every lock is lost.
	FaultRedisRestart FaultKind = "redis-restart"
	// FaultRedisDown kills redis-server and keeps it down for longer than
	// the lease before starting an empty one.
	FaultRedisDown FaultKind = "redis-down"
	// FaultBlackhole stops all traffic through one replica's proxy (held,
	// not dropped, as TCP would retransmit) for longer than the lease.
	FaultBlackhole FaultKind = "blackhole"
	// FaultDelay delays every chunk through one replica's proxy.
	FaultDelay FaultKind = "delay"
	// FaultReset resets one replica's connections and refuses new ones for
	// a while.
	FaultReset FaultKind = "reset"
	// FaultLoad burns every CPU in the harness process for a while, so the
	// replicas run late on their sub-second leases.
	FaultLoad FaultKind = "load"
	// FaultFailover runs CLUSTER FAILOVER on a replica of a master that
	// holds lock keys (Redis Cluster runs only).
	FaultFailover FaultKind = "cluster-failover"
	// FaultKillMaster kills a master of the cluster so its replica is
	// promoted (Redis Cluster runs only); the master comes back as a
	// replica.
	FaultKillMaster FaultKind = "cluster-kill-master"
	// FaultHandOver asks the leaders of a third of the roles (at least
	// one) at once, through the lock as an operator does (hostloom
	// handover ROLE --to ID), to hand each role to another of its live
	// participants (H4). Over etcd a handover to a named successor is one
	// transaction that stores the successor as the holder, and the
	// successor takes the key without a write; over Redis and PostgreSQL
	// it is a release naming the successor. Like a graceful handover it
	// must leave no overlap at all.
	FaultHandOver FaultKind = "handover"
	// FaultRestart restarts a leader gracefully, as a rolling deploy
	// does: SIGTERM (the replica stops its electors, or leaves as a
	// Process, releasing its leases), a clean exit, and a new
	// incarnation at once. Like a handover it must leave no overlap at
	// all; the replica must exit cleanly and leak no goroutine.
	FaultRestart FaultKind = "restart"
)

// StandaloneFaults are the fault kinds of a run over one redis-server.
var StandaloneFaults = []FaultKind{
	FaultKill, FaultPause, FaultRedisRestart, FaultRedisDown,
	FaultBlackhole, FaultDelay, FaultReset, FaultLoad, FaultHandOver, FaultRestart,
}

// Fault is one injected fault, as the harness logged it.
type Fault struct {
	Seq    int       `json:"seq"`
	Kind   FaultKind `json:"kind"`
	Target int       `json:"target"` // replica index, -1 when not a replica
	// Identity is the victim incarnation for replica faults.
	Identity string `json:"id,omitempty"`
	// Start is when the fault began; Heal when it was undone (SIGCONT,
	// proxy back to pass, server up again, victim restarted).
	Start time.Time `json:"start"`
	Heal  time.Time `json:"heal"`
	// LostState marks faults after which the backend may have forgotten
	// leases it granted (restart, failover).
	LostState bool `json:"lost_state,omitempty"`
	// Unavailable marks faults during which nobody can lead (the backend is
	// down); leaderless time is measured from Heal for them.
	Unavailable bool `json:"unavailable,omitempty"`
	// Member marks faults of a member of a consensus cluster (etcd): the
	// backend commits every write to a majority and keeps its leases
	// across them, so any overlap they leave breaks the guarantee.
	Member bool `json:"member,omitempty"`
	// Extended is how much longer than its TTL the backend may keep every
	// lease because of the fault, counted from the heal: a new etcd
	// leader restarts every lease's TTL plus its election timeout, so the
	// lease of a holder that died meanwhile outlives the heal by up to
	// that. The recovery bound after the fault grows by it.
	Extended time.Duration `json:"extended,omitempty"`
	// Delay is the per-chunk delay of a delay fault.
	Delay  time.Duration `json:"delay,omitempty"`
	Detail string        `json:"detail,omitempty"`
}

// String is the fault as logged: sequence, kind, victim, start and heal.
func (f Fault) String() string {
	who := ""
	if f.Target >= 0 {
		who = fmt.Sprintf(" replica %d (%s)", f.Target, f.Identity)
	}
	return fmt.Sprintf("#%d %s%s at %s healed %s later %s", f.Seq, f.Kind, who,
		f.Start.UTC().Format("15:04:05.000"), f.Heal.Sub(f.Start).Round(time.Millisecond), f.Detail)
}

// Incarnation is one run of a replica process, as the harness saw it.
type Incarnation struct {
	Identity string    `json:"id"`
	Replica  int       `json:"replica"`
	PID      int       `json:"pid"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	// Killed is set when the harness sent SIGKILL; Stopped when it asked
	// the process to shut down (SIGTERM). Any other exit is a crash.
	Killed  bool   `json:"killed,omitempty"`
	Stopped bool   `json:"stopped,omitempty"`
	Exit    string `json:"exit"` // the process state, e.g. "exit status 0"
	OK      bool   `json:"ok"`   // exited with status 0
}
