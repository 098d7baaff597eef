package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.uber.org/zap/zapcore"
)

// DefaultPostgresTable is locking.postgres.table's default, the lease
// table of pglock (pglock.DefaultTable).
const DefaultPostgresTable = "hostloom_locks"

// MaxPostgresTableLength is the longest locking.postgres.table, in bytes:
// pglock derives four more table names from it (the longest adds
// "_participants"), and each must fit PostgreSQL's 63-byte identifiers
// (pglock.MaxTableLength).
const MaxPostgresTableLength = 63 - len("_participants")

// PostgresConfig is locking.postgres: provider postgres, built by the
// pglock module (pglockfx in an fx app). config reads and checks the keys
// only; it links no database driver, so the DSN's syntax is checked when
// the pool is built (an error naming locking.postgres.dsn).
//
// DSN is a Secret: String, MarshalLogObject, JSON and errors never show
// it, since a connection string usually carries the password.
type PostgresConfig struct {
	// DSN is the connection string, a postgres:// URL or key=value pairs
	// as libpq takes them. Required for provider postgres unless the app
	// supplies its own pool. Never logged.
	DSN Secret `koanf:"dsn"`
	// Table is the lease table's name; four more tables take it as a
	// prefix. Letters, digits and underscores, not starting with a digit,
	// at most MaxPostgresTableLength bytes. Default hostloom_locks.
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

// pgIdentifier is what table and schema accept, as pglock does.
var pgIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validate checks the section for provider postgres. An empty dsn is not
// an error here (the app may supply its own pool); building the pool from
// the section checks it.
func (p PostgresConfig) validate(src sources) []*FieldError {
	var errs []*FieldError
	bad := func(key, format string, a ...any) {
		errs = append(errs, src.fieldError("locking.postgres."+key, format, a...))
	}
	switch {
	case p.Table == "":
		bad("table", `"" is empty: name a table (default %s)`, DefaultPostgresTable)
	case !pgIdentifier.MatchString(p.Table):
		bad("table", "%q: want letters, digits and underscores, not starting with a digit", p.Table)
	case len(p.Table) > MaxPostgresTableLength:
		bad("table", "%q: %d bytes, at most %d", p.Table, len(p.Table), MaxPostgresTableLength)
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
	slices.SortStableFunc(errs, func(a, b *FieldError) int { return strings.Compare(a.Key, b.Key) })
	return errs
}

// String describes the section with the DSN redacted.
func (p PostgresConfig) String() string {
	return fmt.Sprintf("dsn=%s table=%q schema=%q external_schema=%t notifications=%t max_conns=%d",
		p.DSN.String(), p.Table, p.Schema, p.ExternalSchema, p.Notifications, p.MaxConns)
}

// GoString keeps %#v as safe as %v.
func (p PostgresConfig) GoString() string { return "config.PostgresConfig{" + p.String() + "}" }

// MarshalLogObject logs the section with the DSN redacted.
func (p PostgresConfig) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("dsn", p.DSN.String())
	enc.AddString("table", p.Table)
	enc.AddString("schema", p.Schema)
	enc.AddBool("external_schema", p.ExternalSchema)
	enc.AddBool("notifications", p.Notifications)
	enc.AddInt("max_conns", p.MaxConns)
	return nil
}
