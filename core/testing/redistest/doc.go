// Package redistest starts private redis-server processes for tests.
//
// # Servers
//
// Start launches a redis-server bound to 127.0.0.1 on a random free port,
// with persistence off (--save "" --appendonly no) and a private temporary
// directory, waits until it answers PING and stops it when the test ends.
// StartMain does the same without a testing.TB, for TestMain and
// benchmarks. StartCluster launches several masters in cluster mode and
// joins them with redis-cli --cluster create. StartSentinel launches a
// Sentinel (redis-server --sentinel) monitoring a Server, and
// FailoverClient connects through it.
//
// # One launcher
//
// Launch, LaunchCluster and LaunchSentinel are the same launcher for code
// without a testing.TB, with options: extra server arguments (a replica's
// --replicaof, a benchmark's --maxclients), a directory kept for a
// post-mortem, clusters with replicas and a node timeout, Sentinel quorum
// and timeouts. The unit tests, the benchmark harness (bench/, a module
// of its own that replaces this one with its checkout) and the chaos
// harness (test/chaos) all start their servers through this package, so a
// server binary chosen once (see Valkey) applies to all of them.
// Server.Relaunch, Kill and Signal inject faults: a restart with an empty
// data set on the same port, a crash, a frozen process.
//
// # Missing redis-server
//
// When no server binary is found, Start skips the test with a clear
// message, so a developer without Redis can still run the other tests.
// When the environment variable CI is non-empty or HOSTLOOM_REQUIRE_REDIS
// is 1 (Required reports it), the test fails instead: in CI the Redis tests
// must run, never skip.
//
// # Valkey
//
// The binaries are redis-server and redis-cli, or valkey-server and
// valkey-cli when Redis is not installed. HOSTLOOM_REDIS_SERVER and
// HOSTLOOM_REDIS_CLI select others, for example to run the same tests
// against Valkey on a machine that has both.
//
// # Processes
//
// Every process is owned by the Server that started it: Stop, Kill and the
// test's cleanup end it and wait for it. On Linux the server also receives
// SIGKILL when the test binary dies, so a killed test run leaves no server
// behind.
package redistest
