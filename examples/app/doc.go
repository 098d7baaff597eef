// Command app is a small service that shows every part of HostLoom: two
// roles elected over one lock, a scheduled job on one, a leader channel on
// the other, health, leadership, jobs and metrics endpoints.
//
// # Running it
//
//	go run ./examples/app
//
// runs with the embedded config.yaml: the in-process memory lock, so this
// one process leads both roles within a second. Against Redis or Valkey,
// run two or three of them on different ports:
//
//	export HOSTLOOM_LOCKING__PROVIDER=redis HOSTLOOM_LOCKING__REDIS__ADDRS=127.0.0.1:6379
//	go run ./examples/app -http 127.0.0.1:8081 &
//	go run ./examples/app -http 127.0.0.1:8082 &
//	curl -s 127.0.0.1:8081/leadership
//	curl -s 127.0.0.1:8082/jobs
//
// On PostgreSQL, the provider and the connection string are all it needs
// (the tables are created on first use):
//
//	export HOSTLOOM_LOCKING__PROVIDER=postgres
//	export HOSTLOOM_LOCKING__POSTGRES__DSN='postgres://svc:secret@127.0.0.1:5432/app'
//	go run ./examples/app -http 127.0.0.1:8081 &
//	go run ./examples/app -http 127.0.0.1:8082 &
//
// One process leads each role, and every process shows the same leader,
// participants and job history. Stop the leader with Ctrl-C or SIGTERM: it
// releases its leases on the way out and another process takes over at
// once (the release is published to the waiting candidates). The process
// exits with code 0.
//
// # Flags
//
//	-config path     YAML read over the embedded config.yaml (HOSTLOOM_CONFIG)
//	-http addr       listen address, default 127.0.0.1:8080 (HOSTLOOM_HTTP_ADDR); :0 picks a port
//	-log-format fmt  console (default) or json
//	-log-level lvl   debug, info (default), warn, error
//
// Every configuration key can be set with an environment variable such as
// HOSTLOOM_LEADERSHIP__LEASE=20s; see config.yaml and
// docs/configuration.md.
//
// # Endpoints
//
//   - /healthz: 200 while every elector's loop is healthy.
//   - /readyz: as /healthz, and 503 before start and during shutdown.
//   - /leadership: JSON, one entry per role: role; this process's
//     identity, is_leader, term and fence (the current term's fencing
//     token, 0 when not leading); leader, the leader's identity as this
//     process learned it without I/O ("" when unknown); safety_margin,
//     coordinated, lock_key, provider_key; from the backend, holder
//     (identity and remaining_ms of the lease) and participants (identity,
//     leader, since) of the role. A failed lookup shows as holder_error or
//     participants_error in its role's entry; the lookups of a request
//     share a one-second budget.
//   - /jobs: JSON, one entry per job: role, name, schedule, next (slot),
//     running, paused, last_slot, last_run, last_outcome, last_error and
//     last_success as this process's scheduler saw them, and history: the
//     five newest runs of every replica from the slot store (slot, started,
//     ended, identity, fence, outcome, attempt), or history_note when the
//     scheduler has no store that keeps job records, or history_error.
//   - /metrics: Prometheus text, from OpenTelemetry through the
//     OpenTelemetry Prometheus exporter.
//   - /dashboard/: the operators' web dashboard (package dashboard):
//     roles, jobs and an audit log, live; read-only unless
//     HOSTLOOM_DASHBOARD_CREDENTIAL holds the operators' credential, when
//     operators sign in to pause, resume and resign.
//
// # What runs
//
// The billing leader runs the invoices job every 5 seconds. Every process
// produces an inventory change every 200ms into the inventory-changes
// leader channel; only the inventory leader's changes reach its reader,
// which logs a summary every 25 changes. Followers' changes are discarded
// and counted on the hostloom.leadership.channel.dropped metric.
package main
