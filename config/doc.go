// Package config loads HostLoom's configuration with koanf: the defaults,
// then YAML (embedded documents, then a file), then HOSTLOOM_ environment
// variables, into typed sections with time.Duration fields.
//
// # Sources and precedence
//
// Load starts from Defaults (the core packages' defaults and the memory
// provider), applies each WithYAML document, the file at its path, and the
// environment, later sources winning key by key. An environment variable
// names a key with "__" between levels and is case-insensitive:
// HOSTLOOM_LEADERSHIP__LEASE=20s sets leadership.lease;
// HOSTLOOM_LEADERSHIP__ROLES__BILLING__LEASE=40s sets
// leadership.roles.billing.lease; lists are comma-separated
// (HOSTLOOM_LOCKING__REDIS__ADDRS=a:6379,b:6379). Only variables whose name
// starts with a section (LOCKING, LEADERSHIP, LEADER_CHANNEL, SCHEDULING)
// are configuration. Role names given through the environment are lower
// case; a role whose name contains "." cannot be overridden.
//
// # Strictness
//
// Every key must be known, every value must parse (durations need a unit:
// 15s, 500ms), enum values must be one of the listed ones, and the options
// must satisfy the core packages' checks (for example renew_interval at
// most half the lease). Load reports every problem at once, one *KeyError
// per key, naming the key, the value and its source (file path or variable
// name). A missing file is an error unless Optional is given; YAML syntax
// errors keep their line number.
//
// Not checked here: a lease longer than locking.max_lease (T2). That
// relation is checked per role when an elector starts, so the error can
// name the role.
//
// # Secrets
//
// Redis passwords are Secret values: String, GoString, JSON, text and zap
// encodings show "[redacted]", and no error carries them. Use Value where
// the password is needed.
//
// # fx
//
// Module(path) loads the configuration when the app is built and provides
// *Config and each section; Supply provides one built by hand. The fx
// modules lockingfx, leadershipfx and schedulingfx read the sections when
// they are present and use Defaults otherwise.
//
// # Reference
//
// Keys lists every key with its type, default and environment variable;
// docs/configuration.md is the human-readable reference and a test keeps
// the two in sync.
//
// Rule ids (E6, K5, …) are explained in docs/rules.md.
package config
