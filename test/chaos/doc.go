// Package chaos is HostLoom's reliability harness: it runs several replica
// processes electing many roles over a real redis-server, injects faults,
// and judges the recorded history with a checker, the way etcd's
// robustness tests and Jepsen do.
//
// # What is recorded
//
// Each replica process (test/chaos/replica) runs one Elector per role.
// While a role's Token is live the replica does "work" in short slices and
// appends one Record per slice to its own history file: role, incarnation
// identity, term, start and end on the shared wall clock, and the same on
// the monotonic clock. Before each slice it calls leadership.Assert on the
// Token (the record keeps when the call returned: the slice's
// Assert-checked effect); the slice ends the moment the Token is done.
// After each slice the replica writes the slice's fenced effect: an entry
// "identity term fence seq" appended through fencing.Gate, with the fence
// of leadership.FenceFrom(Token), to the role's log on a separate
// redis-server, the effects store, which no fault touches. The record
// keeps the gate's answer (accepted, stale, error).
//
// # What is checked
//
// Check judges a History (the records, the effect logs read back from the
// effects store, the harness's fault log and process log):
//
//   - fenced effects, in the order the store accepted them: per role the
//     fences never go back down, so two terms' accepted effects never
//     interleave; each term writes with one fence and no two terms share
//     one; the store holds every write the gate acknowledged and none it
//     refused. Nothing excuses a violation, not even a backend that lost
//     its leases;
//   - Assert-checked work: no Assert call that began after a successor's
//     work began passed, except after the backend lost the lease (bounded
//     like lost-state overlaps); checks that began before and returned
//     after it (the process was stopped in between) are reported;
//   - unfenced work, per role: no two incarnations' slices overlap in time.
//     Documented exceptions are reported separately with their lengths:
//     a paused process (SIGSTOP) finishing its slice after it resumes, a
//     leader noticing its expiry within Limits.ExpiryRace, a stalled
//     leader, and overlaps after the backend lost leases it had granted (a
//     restarted redis-server, a failover), which must end within a lease
//     of the fault;
//   - every leaderless time of a role, counted from the heal of a backend
//     outage, stays within Lease + RetryInterval + 100 ms;
//   - no replica exits unexpectedly, and every replica that is shut down
//     reports no more goroutines than before it started.
//
// # Faults
//
// The harness draws faults from a seeded math/rand/v2 source, so a seed
// reproduces the schedule: kill -9 of a leader (then a restart), a graceful
// restart of a leader (SIGTERM, a clean exit, a new incarnation), SIGSTOP of
// a leader for longer than its lease (then SIGCONT), a redis-server restart
// (every lock lost), Redis down for longer than a lease, a per-replica
// loopback Proxy that blackholes, delays or resets one replica's
// connections, and CPU load on sub-second leases. Every fault is logged
// with its timestamps.
//
// # Replicated backends
//
// With Config.Cluster the replicas run over a Redis Cluster of three
// masters with one replica each (CLUSTER FAILOVER, or SIGKILL of a master);
// with Config.Sentinel over a master, a replica and three sentinels
// (SENTINEL FAILOVER, or SIGKILL of the master). Replication is
// asynchronous, so a failover can lose an acquisition or an extension the
// old master acknowledged: FailoverStats counts how often that let two
// replicas lead one role.
//
// # PostgreSQL
//
// With Config.Postgres the replicas elect over PostgreSQL (package pglock)
// through their proxies, and the server faults are PostgresFaults: fast and
// immediate restarts and an outage. PostgreSQL keeps its data across them,
// so the checker allows no lost-state overlap after them.
//
// # etcd
//
// With Config.Etcd the replicas elect over three etcd members (package
// etcdlock, each member a separate process started through etcdtest with
// its peer traffic through proxies) through one proxy per replica and
// member, and the server faults are EtcdFaults: a member killed, paused or
// cut off from the others, the raft leader killed, the whole cluster
// restarted. etcd commits to a majority and keeps its leases across them:
// an overlap during one of them that the replica's own pause or stall does
// not explain is a member-fault overlap (Report.MemberFaultOverlaps),
// counted apart, and each is a problem.
//
// # Running
//
// go test ./test/chaos runs a short smoke (skipped under -short);
// go run ./test/chaos/cmd/chaos -duration 10m runs a soak. See README.md.
package chaos
