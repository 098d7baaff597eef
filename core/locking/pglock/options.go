package pglock

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// DefaultTable is the lease table's name when Options.Table is "".
const DefaultTable = "hostloom_locks"

// MaxTableLength is the longest Options.Table accepted, in bytes: the
// longest derived name (Table + "_participants") must fit PostgreSQL's
// 63-byte identifiers.
const MaxTableLength = 63 - len(participantsSuffix)

// Suffixes of the tables derived from Options.Table.
const (
	participantsSuffix = "_participants"
	stateSuffix        = "_state"
	jobsSuffix         = "_jobs"
	runsSuffix         = "_job_runs"
)

// ErrInvalidOptions is matched by the error of New for an invalid Options
// field; the message names the field and the value.
var ErrInvalidOptions = errors.New("pglock: invalid options")

// Options configures a Provider. The zero value is valid: every zero field
// takes the default its documentation states.
type Options struct {
	// Table is the lease table's name (default DefaultTable): letters,
	// digits and underscores, not starting with a digit, at most
	// MaxTableLength bytes. Participants, state and job records live in four
	// more tables named Table+"_participants", "_state", "_jobs" and
	// "_job_runs". The name is also the
	// channel of LISTEN/NOTIFY. It is quoted as an SQL identifier, so case
	// matters ("Locks" and "locks" are two tables).
	Table string

	// Schema is the tables' schema (default "": the connection's
	// search_path, usually public), with the same rules as Table.
	Schema string

	// ExternalSchema, when true, never creates the tables: the team runs
	// Schema(...) with its own migrations, and a role without CREATE
	// privilege can use the provider. When false (the default), the first
	// operation runs CREATE TABLE IF NOT EXISTS. Either way the first
	// operation checks that the tables have the expected columns.
	ExternalSchema bool

	// DisableNotifications, when true, opens no LISTEN connection and
	// publishes nothing: watchers are never woken and electors poll on
	// their RetryInterval (and the holder's remaining lease), and resign
	// requests are not supported, and every statement is sent unprepared
	// (see the package documentation). Set it behind PgBouncer in transaction
	// mode, which cannot keep a LISTEN session. Default false: releases,
	// acquisitions and resign requests go through LISTEN/NOTIFY on one
	// dedicated connection per provider.
	DisableNotifications bool

	// ReconnectMax bounds the backoff between attempts to reconnect the
	// LISTEN connection (default 1s; the first retry waits 10ms, then the
	// wait doubles).
	ReconnectMax time.Duration

	// AuthAdvice is what an error of the server's refusal (credentials,
	// privileges, no such database: locking.ErrUnauthorized) advises to
	// check, which an elector logs with LeadershipProviderAuthFailed. Set
	// it to where the pool's settings come from: pglockbuild sets
	// "check locking.postgres.dsn …" for the pool it builds from the
	// configuration. Default (""): check the credentials of the
	// *pgxpool.Pool given to New, the app's own.
	AuthAdvice string
}

// identifier is what Table and Schema accept.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate reports the first invalid field, naming it and its value; the
// error matches ErrInvalidOptions.
func (o Options) Validate() error {
	if o.Table != "" {
		if !identifier.MatchString(o.Table) {
			return fmt.Errorf("%w: Table %q: want letters, digits and underscores, not starting with a digit", ErrInvalidOptions, o.Table)
		}
		if len(o.Table) > MaxTableLength {
			return fmt.Errorf("%w: Table %q: %d bytes, at most %d", ErrInvalidOptions, o.Table, len(o.Table), MaxTableLength)
		}
	}
	if o.Schema != "" {
		if !identifier.MatchString(o.Schema) || len(o.Schema) > 63 {
			return fmt.Errorf("%w: Schema %q: want letters, digits and underscores, not starting with a digit, at most 63 bytes", ErrInvalidOptions, o.Schema)
		}
	}
	if o.ReconnectMax < 0 {
		return fmt.Errorf("%w: ReconnectMax %v must not be negative", ErrInvalidOptions, o.ReconnectMax)
	}
	return nil
}

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.Table == "" {
		o.Table = DefaultTable
	}
	if o.ReconnectMax == 0 {
		o.ReconnectMax = time.Second
	}
	return o
}
