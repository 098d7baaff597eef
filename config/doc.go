// Package config loads HostLoom's configuration with koanf: the defaults,
// then YAML (embedded documents, then a file), then HOSTLOOM_ environment
// variables, into typed sections with time.Duration fields.
//
// # Sources and precedence
//
// Load starts from Defaults (the core packages' defaults), applies each
// WithYAML document, the file at its path, and the environment, later
// sources winning key by key. koanf merges the sources and its Unmarshal
// (mapstructure) decodes them: durations through mapstructure's duration
// hook, enums (the core types leadership.WhenUncoordinated and
// leadership.FullMode) and TimeZone through
// UnmarshalText, unknown keys refused by ErrorUnused. One hook of our own,
// strictScalars, refuses what mapstructure would accept too loosely (a
// bare number as a duration, 1.5 as an int) and parses the strings
// environment variables give.
//
// An environment variable names a key with "__" between levels and is
// case-insensitive: HOSTLOOM_LEADERSHIP__LEASE=20s sets leadership.lease;
// HOSTLOOM_LEADERSHIP__ROLES__BILLING__LEASE=40s sets
// leadership.roles.billing.lease; lists are comma-separated
// (HOSTLOOM_LOCKING__REDIS__ADDRS=a:6379,b:6379). Only variables whose name
// starts with a section (LOCKING, LEADERSHIP, LEADER_CHANNEL, SCHEDULING)
// are configuration. Role names given through the environment are lower
// case; a role whose name contains "." cannot be overridden.
//
// # Backends
//
// config knows two providers itself, memory and disabled, and links the
// library module's own backend, redis: locking.provider: redis and the
// locking.redis keys (RedisConfig) load without any option. Every other
// locking.provider value names a Backend the program links and passes to
// Load with WithBackends (lockbuild.LoadOption; in an fx app, each
// backend's fx module): the backend's Section holds its keys,
// locking.<name>.*, which Load decodes with the rules below and checks
// with the section's Validate when the backend is in use. A backend named
// redis passed this way (redislockbuild.Backend) takes the place of the
// built-in one. A provider no linked backend serves, and the keys of a
// backend not passed, are errors. There is no global registry.
// docs/providers.md shows how to write a backend.
//
// # Fail closed
//
// There is no default lock (G6): locking.provider must be set by some
// source, else Load fails naming the key, the choices and the sources it
// read. memory is used only when chosen.
//
// # Strictness
//
// Every key must be known (names match exactly), every value must parse
// (durations need a unit: 15s, 500ms), enum values must be one of the
// listed ones, and the options must satisfy the core packages' checks (for
// example renew_interval at most half the lease, safety_margin below
// renew_interval) and the checks of the backend in use (for Redis:
// host:port, port 1–65535). Load
// reports every problem at once, one *FieldError per problem, naming the
// dotted key, the value and its source (file path, document name,
// variable name, or default); a check relating two keys names the key the
// user set and the source of the other. A missing file is an error unless
// Optional is given; YAML syntax errors keep their line number.
//
// Checked later, because they need the running app: a lease longer than
// locking.max_lease (T2), checked per role when an elector starts; a
// leadership.roles.<name> naming no role the app runs
// (LeadershipConfig.CheckRoles, O4). Config.Source and the Source methods
// of the sections name where a key's value came from, for such errors.
//
// # Secrets
//
// Passwords and connection strings are Secret values (a backend's
// section declares its own): String, GoString, JSON, text and zap
// encodings show "[redacted]", and no error carries them. Use Value where
// the secret is needed.
//
// # fx
//
// Package config imports no fx: configfx.Module(path) loads the
// configuration when the app is built and provides *Config and each
// section (LockingConfig, LeadershipConfig, LeaderChannelConfig,
// SchedulingConfig); configfx.Supply provides one built by hand.
// lockingfx needs the locking section; leadershipfx and schedulingfx use
// Defaults for a section the graph lacks.
//
// # Reference
//
// Keys lists every key with its type, default and environment variable;
// docs/configuration.md is the human-readable reference and a test keeps
// the two in sync. Rule ids (G6, O4, T2, …) are explained in
// docs/rules.md.
package config
