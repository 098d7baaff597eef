package pglockbuild

import (
	"regexp"
	"strings"

	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

// Name is the locking.provider value of the backend, and its section:
// locking.postgres.
const Name config.ProviderName = "postgres"

// Config is locking.postgres: provider postgres.
//
// DSN is a config.Secret: String, MarshalLogObject, JSON and errors never
// show it, since a connection string usually carries the password. Its
// syntax is checked when the pool is built (an error naming
// locking.postgres.dsn).
type Config struct {
	// DSN is the connection string, a postgres:// URL or key=value pairs
	// as libpq takes them. Required for provider postgres unless the app
	// supplies its own pool. Never logged.
	DSN config.Secret `koanf:"dsn"`
	// Table is the lease table's name; four more tables take it as a
	// prefix. Letters, digits and underscores, not starting with a digit,
	// at most pglock.MaxTableLength bytes. Default hostloom_locks.
	Table string `koanf:"table"`
	// Schema holds the tables. Default "": the connection's search_path.
	Schema string `koanf:"schema"`
	// ExternalSchema, when true, never creates the tables: the team
	// applies pglock.Schema with its own migrations. Default false.
	ExternalSchema bool `koanf:"external_schema"`
	// Notifications carries releases, acquisitions and resign requests
	// over LISTEN/NOTIFY on one dedicated connection; false polls (behind
	// PgBouncer in transaction mode). Default true.
	Notifications bool `koanf:"notifications"`
	// MaxConns bounds the pool built from DSN. Default 0: the DSN's
	// pool_max_conns, else pgx's default (4 or the number of CPUs,
	// whichever is larger).
	MaxConns int `koanf:"max_conns"`
}

// Defaults returns the section's defaults.
func Defaults() Config {
	return Config{Table: pglock.DefaultTable, Notifications: true}
}

// SectionOf returns the locking.postgres section of cfg (a copy): as
// loaded when the configuration was loaded with the backend, else the
// defaults.
func SectionOf(cfg config.LockingConfig) Config {
	if s, ok := cfg.Section(Name).(*Config); ok && s != nil {
		return *s
	}
	return Defaults()
}

// With returns a copy of cfg whose locking.postgres section is p, for a
// configuration changed in code.
func With(cfg config.LockingConfig, p Config) config.LockingConfig {
	return cfg.WithBackends(Backend{}).WithSection(Name, &p)
}

// pgIdentifier is what table and schema accept, as pglock does.
var pgIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks the section for provider postgres. An empty dsn is not
// an error here (the app may supply its own pool); building the pool from
// the section checks it.
func (p *Config) Validate(keys config.SectionKeys) []*config.FieldError {
	var errs []*config.FieldError
	bad := func(key, format string, a ...any) {
		errs = append(errs, keys.Errorf(key, format, a...))
	}
	switch {
	case p.Table == "":
		bad("table", `"" is empty: name a table (default %s)`, pglock.DefaultTable)
	case !pgIdentifier.MatchString(p.Table):
		bad("table", "%q: want letters, digits and underscores, not starting with a digit", p.Table)
	case len(p.Table) > pglock.MaxTableLength:
		bad("table", "%q: %d bytes, at most %d", p.Table, len(p.Table), pglock.MaxTableLength)
	}
	if p.Schema != "" && (!pgIdentifier.MatchString(p.Schema) || len(p.Schema) > 63) {
		bad("schema", "%q: want letters, digits and underscores, not starting with a digit, at most 63 bytes", p.Schema)
	}
	if p.MaxConns < 0 {
		bad("max_conns", "%d must not be negative", p.MaxConns)
	}
	if p.DSN.IsSet() && strings.TrimSpace(p.DSN.Value()) == "" {
		bad("dsn", "is blank")
	}
	return errs
}

// fields are the section's keys as String and MarshalLogObject show
// them, the DSN redacted.
func (p Config) fields() config.Fields {
	return config.Fields{
		{Key: "dsn", Value: p.DSN},
		{Key: "table", Value: p.Table},
		{Key: "schema", Value: p.Schema},
		{Key: "external_schema", Value: p.ExternalSchema},
		{Key: "notifications", Value: p.Notifications},
		{Key: "max_conns", Value: p.MaxConns},
	}
}

// String describes the section with the DSN redacted.
func (p Config) String() string { return p.fields().String() }

// GoString keeps %#v as safe as %v.
func (p Config) GoString() string { return "pglockbuild.Config{" + p.String() + "}" }

// MarshalLogObject logs the section with the DSN redacted.
func (p Config) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return p.fields().MarshalLogObject(enc)
}
