// Command hostloom shows and steers the leader elections and scheduled jobs
// of services built with HostLoom, from outside the processes (rule O1 and
// S11; the rule ids are explained in docs/rules.md).
//
//	hostloom <verb> [args] [flags]
//
// # Verbs
//
//	status [ROLE...]          who leads each role: leader, lease TTL, fence, participants
//	watch [ROLE...]           handovers as they happen (notifications, with polling)
//	resign ROLE               ask the leader to step down cooperatively
//	handover ROLE --to ID     ask the leader to hand the role to a named participant
//	release --force ROLE      delete the lease (after a warning; --yes without a terminal)
//	jobs [ROLE]               the scheduler's jobs: schedule, next run, paused, running, last slot and run
//	history ROLE JOB          a job's latest runs, newest first
//	pause ROLE JOB            pause a job on every replica
//	resume ROLE JOB           resume it
//	version                   the module version of the build and the Go version
//	completion SHELL          the completion script of bash, zsh, fish or powershell
//
// Every verb takes -o/--output (json or yaml for scripts, wide for tables
// with more columns; --json is -o json), --namespace (instead of the
// configuration's locking.namespace), --config (or -config, -c: the
// service's YAML file) and --timeout (bound on connecting and on each
// request; default the backend's own, such as locking.redis.dial_timeout,
// locking.etcd.dial_timeout or the PostgreSQL DSN's connect_timeout, else
// 5s).
// "hostloom <verb> --help" documents each verb and its flags.
//
// # Configuration
//
// hostloom reads the configuration the service reads, through the config
// package: defaults, the YAML file (--config, or the environment variable
// HOSTLOOM_CONFIG), then HOSTLOOM_* environment variables.
// It opens whichever backend locking.provider names among those it links
// (backends.go: redis, postgres, etcd) through one path,
// lockbuild.Open: the backend builds a client from its section and asks
// the server once. The memory provider lives inside one process, so the
// CLI cannot show it. Roles are found through
// leadership.lock_key_format and the per-role overrides; passwords and the
// DSN are used, never printed.
//
// # Exit codes
//
// 0 on success; 1 when the command ran and failed (the server unreachable
// or refusing the credentials, a configuration error, no such role in the
// namespace, release refused without confirmation); 2 when the command line
// is wrong (unknown verb or flag, missing argument), with the usage on
// stderr. A listing that finds nothing (status or jobs over an empty
// namespace) succeeds: it says which namespace it read and where that
// came from.
//
// docs/operations.md shows a session.
package main
