// Package etcdtest starts private etcd clusters for tests: three members
// (by default) on loopback, each a separate etcd server process, with
// helpers to kill, pause (SIGSTOP), resume and restart a member.
//
// # Clusters
//
// Start launches the members, each listening on 127.0.0.1 only (clients and
// peers on free ports), with its data in a private temporary directory
// (fsync off: the data lives as long as the test), waits until the
// cluster has a leader that serves a linearizable read, and stops every
// member when the test ends. Launch does the same without a testing.TB,
// for TestMain, benchmarks and the chaos harness.
//
// The members run with a 50 ms heartbeat and a 500 ms election timeout
// (Options.HeartbeatInterval, Options.ElectionTimeout), so the server's
// minimum lease is one second (etcd rounds 1.5 election timeouts up to
// whole seconds) and a lost leader is replaced within about a second.
// etcd's defaults (100 ms, 1 s) make the minimum two seconds.
//
// # Partitions
//
// With Options.PeerProxy every member advertises the address of a proxy
// in the test process instead of its own peer listener, so all traffic
// between members passes through proxies. Member.Isolate cuts a member
// off from the others, both ways (the proxies learn which member opened
// a connection from /proc, so this is Linux only), while clients still
// reach it; Member.Rejoin ends the cut.
//
// # One cluster per test binary
//
// A test binary's TestMain runs its tests through Shared.Main, which
// starts one cluster for all of them; each test takes a key prefix of its
// own from Shared.NewPrefix, so tests do not see each other's keys
// without a cluster each. Tests that inject faults start a cluster of
// their own with Start.
//
// # The server binary
//
// The binary is the file named by HOSTLOOM_ETCD_SERVER, else "etcd" on
// PATH. Build it from the etcd server module at the version the client
// uses, for example:
//
//	mkdir /tmp/etcd-build && cd /tmp/etcd-build && go mod init build &&
//	go get go.etcd.io/etcd/server/v3@v3.7.3 &&
//	go build -o "$HOME/bin/etcd" go.etcd.io/etcd/server/v3
//
// (go install cannot build it directly: the server's go.mod has replace
// directives.) The repository's .ci/run does this.
//
// # Missing server
//
// Without a binary, Start skips the test with the reason and Shared.Main
// runs the tests, which skip; when the environment variable CI is
// non-empty or HOSTLOOM_REQUIRE_ETCD is 1 (Required reports it), they fail
// instead.
//
// # Processes
//
// Every member process is owned by its Member: Kill, Stop and the test's
// cleanup end it and wait for it. On Linux a member also receives SIGKILL
// when the test binary dies, so a killed test run leaves no server behind.
package etcdtest
