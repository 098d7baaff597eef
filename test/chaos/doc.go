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
// the monotonic clock. The work honours the token: it checks Token().Done()
// between slices and ends a slice the moment the token is cancelled.
//
// # What is checked
//
// Check judges a History (the records plus the harness's fault log and
// process log):
//
//   - per role, no two incarnations' work overlaps in time. The one
//     documented exception is a paused process (SIGSTOP) that resumes
//     before it notices its lease expired: such overlaps are reported as
//     paused windows with their length, which must stay within the lease;
//   - overlaps after the backend lost leases it had granted (a restarted
//     redis-server, a Redis Cluster failover) are outside the guarantee;
//     they are reported separately and must end within a lease of the
//     fault;
//   - every leaderless time of a role, counted from the heal of a backend
//     outage, stays within Lease + RetryInterval + 100 ms;
//   - no replica exits unexpectedly, and every replica that is shut down
//     reports no more goroutines than before it started.
//
// # Faults
//
// The harness draws faults from a seeded math/rand/v2 source, so a seed
// reproduces the schedule: kill -9 of a leader (then a restart), SIGSTOP of
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
// # Running
//
// go test ./test/chaos runs a short smoke (skipped under -short);
// go run ./test/chaos/cmd/chaos -duration 10m runs a soak. See README.md.
package chaos
