package pglock

import (
	"strings"

	"github.com/jackc/pgx/v5"
)

// The SQL layer: the schema and every statement the provider runs, with
// {L} (the lease table), {P} (participants) and {S} (state) replaced by
// quoted identifiers. Every statement is one round trip, takes its times
// from the server's clock_timestamp() (read once per statement, in the
// CTE "now"), and passes all data as parameters; durations are bigint
// microseconds ($n::bigint * interval '1 microsecond').

// schemaSQL creates the tables. The advisory lock (scoped to the
// transaction the simple protocol runs the statements in) serialises
// concurrent first uses, which CREATE TABLE IF NOT EXISTS alone does not.
// An ALTER TABLE locks its table even when the column exists: each comes
// right after its table's CREATE, so the tables are locked in the order
// probeSQL and the statements read them ({L} first), and a probe running
// meanwhile waits instead of deadlocking.
//
// {L}: one row per key, kept after a release (value and expires_at NULL)
// so the last fence survives: fence is the last fence issued, free_since
// when a lower-priority caller first found the key free while a
// higher-priority participant was live (B2), held_for and held_until the
// participant a release handed the key to and until when it stays that
// participant's to take (B1; added in v0.3.0 by ALTER TABLE). {P}: live and expired
// participant registrations. {S}: the monotonic state values (L8); prev
// is the value before the last write, so one statement reports whether
// it advanced.
const schemaSQL = `SELECT pg_advisory_xact_lock(hashtext('hostloom:' || {Lname}));
CREATE TABLE IF NOT EXISTS {L} (
    key        text   PRIMARY KEY,
    value      text,
    expires_at timestamptz,
    fence      bigint NOT NULL DEFAULT 0,
    free_since timestamptz
);
ALTER TABLE {L} ADD COLUMN IF NOT EXISTS held_for text, ADD COLUMN IF NOT EXISTS held_until timestamptz;
CREATE TABLE IF NOT EXISTS {P} (
    key        text        NOT NULL,
    owner      text        NOT NULL,
    since      timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    priority   integer     NOT NULL DEFAULT 0,
    PRIMARY KEY (key, owner)
);
CREATE TABLE IF NOT EXISTS {S} (
    key   text   PRIMARY KEY,
    value bigint NOT NULL,
    prev  bigint
);
CREATE TABLE IF NOT EXISTS {J} (
    key        text        PRIMARY KEY,
    slot       bigint,
    open       bigint,
    run        boolean     NOT NULL DEFAULT false,
    att        integer     NOT NULL DEFAULT 0,
    term       text,
    until_ms   bigint      NOT NULL DEFAULT 0,
    paused     boolean     NOT NULL DEFAULT false,
    seq        bigint      NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL
);
ALTER TABLE {J} ADD COLUMN IF NOT EXISTS extra jsonb;
CREATE TABLE IF NOT EXISTS {H} (
    key    text    NOT NULL,
    idx    integer NOT NULL,
    record text    NOT NULL,
    PRIMARY KEY (key, idx)
);`

// probeSQL selects every column the statements use, from no row: it fails
// when a table or a column is missing or the role may not read them.
const probeSQL = `SELECT l.key, l.value, l.expires_at, l.fence, l.free_since, l.held_for, l.held_until, p.owner, p.since, p.expires_at, p.priority, s.value, s.prev,
    j.slot, j.open, j.run, j.att, j.term, j.until_ms, j.paused, j.seq, j.expires_at, j.extra, h.idx, h.record
FROM {L} l, {P} p, {S} s, {J} j, {H} h WHERE false`

// register upserts the caller as a participant ($4 owner, $5 participant
// ttl µs, $6 priority) when $5 > 0, keeping its first registration time
// while its record is live (P1).
const registerCTE = `reg AS (
    INSERT INTO {P} AS p (key, owner, since, expires_at, priority)
    SELECT $1, $4, now.t, now.t + $5::bigint * interval '1 microsecond', $6::int FROM now WHERE $5::bigint > 0` + registerUpsert

// registerHeldCTE is registerCTE for extendSQL: it registers only when
// the statement's CTE "up" extended the lease. A renewal that finds the
// key released or taken since registers nobody: it may have been on its
// way while its sender stopped and withdrew (H2). "up" waits for the
// key row's lock, so a release that committed first is seen.
const registerHeldCTE = `reg AS (
    INSERT INTO {P} AS p (key, owner, since, expires_at, priority)
    SELECT $1, $4, now.t, now.t + $5::bigint * interval '1 microsecond', $6::int FROM now
    WHERE $5::bigint > 0 AND EXISTS (SELECT 1 FROM up)` + registerUpsert

// registerUpsert ends registerCTE and registerHeldCTE.
const registerUpsert = `
    ON CONFLICT (key, owner) DO UPDATE SET
        since = CASE WHEN p.expires_at > EXCLUDED.since THEN p.since ELSE EXCLUDED.since END,
        expires_at = EXCLUDED.expires_at,
        priority = EXCLUDED.priority
    RETURNING 1
)`

// acquireSQL takes key $1 for $3 µs storing value $2 when it is free
// (never held, released, or expired by the server's clock), issuing the
// fence max(last fence + 1, server time in µs) (G1). The upsert locks
// the key's row, also when it is held, so its RETURNING reports the latest
// holder and expiry in the same round trip; the SET leaves a held row as
// it is. With $5 > 0 it registers the participant (and drops the key's
// expired participants); with $7 > 0 a free key first waits $7 µs for a
// live participant of higher priority than $6 (B2), measured from
// free_since. A key released to a named successor with a hold (held_for,
// held_until) is refused to other owners until the hold ends, with the
// hold's remaining time (B1). An acquisition with $9 publishes
// "acquired" with owner $4 on channel $8.
//
// A key whose row does not exist yet (its very first acquisition) is taken
// without waiting for a higher priority: no participant can have
// registered for it before (the row is created by the first acquisition
// attempt, never deleted by the provider).
//
// Columns: acquired, fence, remaining µs (holder's, or the priority
// wait's), holder value ("" when none), top priority, and a count that
// only makes the notification run.
const acquireSQL = `WITH now AS MATERIALIZED (SELECT clock_timestamp() AS t),
` + registerCTE + `,
gone AS (
    DELETE FROM {P} p USING now
    WHERE $5::bigint > 0 AND p.key = $1 AND p.owner <> $4 AND p.expires_at <= now.t
    RETURNING 1
),
others AS (
    SELECT max(p.priority) AS top FROM {P} p, now
    WHERE p.key = $1 AND p.owner <> $4 AND p.expires_at > now.t
),
cand AS MATERIALIZED (
    SELECT now.t, others.top,
        coalesce($5::bigint > 0 AND $7::bigint > 0 AND others.top > $6::int, false) AS yielding
    FROM now, others
),
up AS (
    INSERT INTO {L} AS l (key, value, expires_at, fence, free_since)
    SELECT $1, $2, cand.t + $3::bigint * interval '1 microsecond', ` + `(extract(epoch FROM cand.t) * 1000000)::bigint` + `, NULL
    FROM cand
    ON CONFLICT (key) DO UPDATE SET (value, expires_at, fence, free_since, held_for, held_until) = (
        SELECT
            CASE WHEN d.take THEN $2 ELSE l.value END,
            CASE WHEN d.take THEN c.t + $3::bigint * interval '1 microsecond' ELSE l.expires_at END,
            CASE WHEN d.take THEN greatest(l.fence + 1, (extract(epoch FROM c.t) * 1000000)::bigint) ELSE l.fence END,
            CASE WHEN d.take THEN NULL WHEN d.free AND c.yielding THEN coalesce(l.free_since, c.t) ELSE l.free_since END,
            CASE WHEN d.take THEN NULL ELSE l.held_for END,
            CASE WHEN d.take THEN NULL ELSE l.held_until END
        FROM cand c, LATERAL (
            SELECT f.free AND NOT f.kept AND NOT (c.yielding AND c.t < coalesce(l.free_since, c.t) + $7::bigint * interval '1 microsecond') AS take, f.free
            FROM (SELECT l.value IS NULL OR l.expires_at IS NULL OR l.expires_at <= c.t AS free,
                coalesce(l.held_until > c.t AND l.held_for <> $4, false) AS kept) f
        ) d
    )
    RETURNING l.key, l.value, l.expires_at, l.fence, l.free_since,
        CASE WHEN l.held_for <> $4 THEN l.held_until END AS held_until
),
res AS MATERIALIZED (
    SELECT coalesce(up.value = $2, false) AS acquired, up.key, up.value, up.expires_at, up.fence, up.free_since, up.held_until, c.t, c.top
    FROM up, cand c
),
note AS (
    SELECT pg_notify($8, json_build_object('t', $10::text, 'e', 'acquired', 'k', res.key, 'o', $4::text)::text)
    FROM res WHERE res.acquired AND $9::bool AND octet_length(res.key) + octet_length($4::text) < 7000
)
SELECT res.acquired,
    CASE WHEN res.acquired THEN res.fence ELSE 0 END,
    CASE
        WHEN res.acquired THEN 0
        WHEN res.value IS NOT NULL AND res.expires_at > res.t THEN ceil(extract(epoch FROM res.expires_at - res.t) * 1000000)::bigint
        WHEN res.held_until > res.t THEN ceil(extract(epoch FROM res.held_until - res.t) * 1000000)::bigint
        WHEN res.free_since IS NOT NULL THEN greatest(1, ceil(extract(epoch FROM res.free_since + $7::bigint * interval '1 microsecond' - res.t) * 1000000)::bigint)
        ELSE 0
    END,
    CASE WHEN NOT res.acquired AND res.value IS NOT NULL AND res.expires_at > res.t THEN res.value ELSE '' END,
    coalesce(greatest(res.top, CASE WHEN $5::bigint > 0 THEN $6::int END), 0),
    (SELECT count(*) FROM note)
FROM res`

// extendSQL resets key $1's expiry to now + $3 µs when it still stores
// value $2 and has not expired, then (only then: see registerHeldCTE)
// registers the participant as acquireSQL does, and looks for a live
// participant with a priority above $6 registered for at least $3 µs
// (B2). The fence is kept. With $8 it publishes "extended" with owner $4
// and the new remaining time $3 µs on channel $7 (table $9), so
// candidates that listen sleep on until the extended lease runs out
// instead of trying when the old one would have. Columns: extended, live
// participants (the caller included; 0 when it registers none or the
// lease was not extended), preempt, a count that only makes the
// notification run.
const extendSQL = `WITH now AS MATERIALIZED (SELECT clock_timestamp() AS t),
up AS (
    UPDATE {L} l SET expires_at = now.t + $3::bigint * interval '1 microsecond'
    FROM now WHERE l.key = $1 AND l.value = $2 AND l.expires_at > now.t
    RETURNING l.key
),
` + registerHeldCTE + `,
others AS (
    SELECT count(*) AS live,
        coalesce(bool_or(p.priority > $6::int AND p.since + $3::bigint * interval '1 microsecond' <= now.t), false) AS preempt
    FROM {P} p, now
    WHERE $5::bigint > 0 AND p.key = $1 AND p.owner <> $4 AND p.expires_at > now.t
),
note AS (
    SELECT pg_notify($7, json_build_object('t', $9::text, 'e', 'extended', 'k', up.key, 'o', $4::text, 'r', $3::bigint)::text)
    FROM up WHERE $8::bool AND octet_length(up.key) + octet_length($4::text) < 7000
)
SELECT EXISTS (SELECT 1 FROM up),
    CASE WHEN $5::bigint > 0 AND EXISTS (SELECT 1 FROM up) THEN others.live + 1 ELSE 0 END,
    others.preempt AND EXISTS (SELECT 1 FROM up),
    (SELECT count(*) FROM note)
FROM others`

// releaseSQL frees key $1 when it still stores value $2 and has not
// expired, keeping the row (and its fence), and with $5 publishes
// "released" naming target $4 ("" for anyone) on channel $3. With a
// target and $7 > 0 the key stays the target's for $7 µs (held_for,
// held_until; B1). Columns: released, a count that only makes the
// notification run.
const releaseSQL = `WITH ` + releaseBody

// releaseWithdrawSQL is releaseSQL that also removes participant $8 of
// key $1, whether or not the key is released: a stopping participant
// withdraws in the same statement (H2).
const releaseWithdrawSQL = `WITH gone AS (DELETE FROM {P} WHERE key = $1 AND owner = $8),
` + releaseBody

// releaseBody is releaseSQL after its WITH.
const releaseBody = `now AS MATERIALIZED (SELECT clock_timestamp() AS t),
up AS (
    UPDATE {L} l SET value = NULL, expires_at = NULL,
        held_for = CASE WHEN $4::text <> '' AND $7::bigint > 0 THEN $4::text END,
        held_until = CASE WHEN $4::text <> '' AND $7::bigint > 0 THEN now.t + $7::bigint * interval '1 microsecond' END
    FROM now WHERE l.key = $1 AND l.value = $2 AND l.expires_at > now.t
    RETURNING l.key
),
note AS (
    SELECT pg_notify($3, json_build_object('t', $6::text, 'e', 'released', 'k', up.key, 'o', $4::text)::text)
    FROM up WHERE $5::bool AND octet_length(up.key) + octet_length($4::text) < 7000
)
SELECT EXISTS (SELECT 1 FROM up), (SELECT count(*) FROM note)`

// advanceSQL stores $2 under state key $1 when it is greater than the
// stored value or none is stored (L8). The upsert always writes, so its
// RETURNING reports the latest value: advanced when there was none (prev
// NULL on insert) or the previous was smaller.
const advanceSQL = `INSERT INTO {S} AS s (key, value, prev) VALUES ($1, $2::bigint, NULL)
ON CONFLICT (key) DO UPDATE SET prev = s.value, value = greatest(s.value, EXCLUDED.value)
RETURNING value, prev IS NULL OR prev < value`

// stateSQL reads state key $1.
const stateSQL = `SELECT value FROM {S} WHERE key = $1`

// resignSQL publishes a resign request for owner $3 ("" for whoever holds
// the key) about key $2 on channel $1.
const resignSQL = `SELECT pg_notify($1, json_build_object('t', $4::text, 'e', 'resign', 'k', $2::text, 'o', $3::text)::text)`

// inspectSQL reads key $1's holder, remaining µs, last fence, and its live
// participants (owners, since in µs, priorities), in one statement.
const inspectSQL = `WITH now AS MATERIALIZED (SELECT clock_timestamp() AS t)
SELECT
    coalesce(l.value IS NOT NULL AND l.expires_at > now.t, false),
    coalesce(CASE WHEN l.expires_at > now.t THEN l.value END, ''),
    coalesce(CASE WHEN l.expires_at > now.t THEN ceil(extract(epoch FROM l.expires_at - now.t) * 1000000)::bigint END, 0),
    coalesce(l.fence, 0),
    coalesce((SELECT array_agg(p.owner ORDER BY p.since, p.owner) FROM {P} p WHERE p.key = $1 AND p.expires_at > now.t), '{}'),
    coalesce((SELECT array_agg((extract(epoch FROM p.since) * 1000000)::bigint ORDER BY p.since, p.owner) FROM {P} p WHERE p.key = $1 AND p.expires_at > now.t), '{}'),
    coalesce((SELECT array_agg(p.priority ORDER BY p.since, p.owner) FROM {P} p WHERE p.key = $1 AND p.expires_at > now.t), '{}')
FROM now LEFT JOIN {L} l ON l.key = $1`

// deregisterSQL removes participant $2 of key $1.
const deregisterSQL = `DELETE FROM {P} WHERE key = $1 AND owner = $2`

// keysSQL lists the keys starting with $1 that have a row (a lease or a
// kept fence) or a live participant.
const keysSQL = `SELECT key FROM {L} WHERE starts_with(key, $1)
UNION
SELECT p.key FROM {P} p WHERE starts_with(p.key, $1) AND p.expires_at > clock_timestamp()`

// checkTermSQL locks key $1's row FOR SHARE in the caller's transaction,
// then (the MATERIALIZED CTE is read first, so the clock is read after the
// lock is granted) reports its fence, whether the lease is live by the
// server's clock, and sets idle_in_transaction_session_timeout for the
// rest of the transaction to the lease's remaining time, unless a smaller
// one is set, so a holder paused inside the transaction cannot keep its
// successor waiting past the lease.
const checkTermSQL = `WITH locked AS MATERIALIZED (
    SELECT l.fence, l.value, l.expires_at FROM {L} l WHERE l.key = $1 FOR SHARE
),
now AS MATERIALIZED (SELECT clock_timestamp() AS t FROM locked),
st AS MATERIALIZED (
    SELECT locked.fence, coalesce(locked.value IS NOT NULL AND locked.expires_at > now.t, false) AS live,
        greatest(1, ceil(extract(epoch FROM locked.expires_at - now.t) * 1000))::bigint AS rem_ms,
        extract(epoch FROM current_setting('idle_in_transaction_session_timeout')::interval) * 1000 AS cur_ms
    FROM locked, now
)
SELECT st.fence, st.live,
    CASE WHEN st.live AND st.fence = $2::bigint THEN set_config('idle_in_transaction_session_timeout',
        (CASE WHEN st.cur_ms > 0 AND st.cur_ms < st.rem_ms THEN st.cur_ms::bigint ELSE st.rem_ms END)::text, true) END
FROM st`

// tables holds the quoted names a provider's statements use.
type tables struct {
	lease, participants, state string // quoted, schema-qualified when set
	jobs, runs                 string // quoted job tables
	name                       string // the unquoted lease table name (LISTEN channel)
	qualified                  string // schema.table as written, for messages and payloads
}

func newTables(schema, table string) tables {
	ident := func(name string) string {
		if schema != "" {
			return pgx.Identifier{schema, name}.Sanitize()
		}
		return pgx.Identifier{name}.Sanitize()
	}
	q := table
	if schema != "" {
		q = schema + "." + table
	}
	return tables{
		lease:        ident(table),
		participants: ident(table + participantsSuffix),
		state:        ident(table + stateSuffix),
		jobs:         ident(table + jobsSuffix),
		runs:         ident(table + runsSuffix),
		name:         table,
		qualified:    q,
	}
}

// expand replaces the placeholders of a statement.
func (t tables) expand(sql string) string {
	return strings.NewReplacer(
		"{Lname}", "'"+t.qualified+"'", // an identifier ([A-Za-z0-9_.]), safe in quotes
		"{L}", t.lease, "{P}", t.participants, "{S}", t.state, "{J}", t.jobs, "{H}", t.runs,
	).Replace(sql)
}

// Schema returns the SQL that creates the tables of a provider with the
// given schema ("" for the search_path) and table ("" for DefaultTable),
// for teams that manage their schema (Options.ExternalSchema): run it
// once, with the simple protocol (psql, or a migration tool), as a role
// allowed to create tables. It is idempotent. It returns an error matching
// ErrInvalidOptions for names Options.Validate refuses.
func Schema(schema, table string) (string, error) {
	o := Options{Schema: schema, Table: table}
	if err := o.Validate(); err != nil {
		return "", err
	}
	o = o.withDefaults()
	return newTables(o.Schema, o.Table).expand(schemaSQL) + "\n", nil
}
