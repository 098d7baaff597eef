package pglock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hostloom/hostloom/core/jobrecord"
)

// The job records (locking.RecordStore), on the tables {J} (one row per
// job, a column per field of the record that earlier releases stored,
// and the fields added since in extra, JSON) and {H} (its history ring). A
// row's version is its xmin, the transaction that last wrote it, which
// every writer changes, so a write is one statement that updates the row
// only if no one wrote it since it was read. The columns are those the
// tables have always had: existing rows read as records. Package
// jobrecord decides what to write.

// The record statements. recordLoadSQL reads key's row (none: NULLs) with
// its version, whether it is live, its remaining time to live in µs and
// the server's clock. recordSwapSQL inserts the row ($2 = 0: there was
// none) or updates it if its version is still $2, and with it writes
// history record $13 at ring index $12 (none when $12 < 0); it returns
// the number of job rows written. recordHistorySQL reads the ring.
const (
	recordLoadSQL = `SELECT j.slot, j.open, coalesce(j.run, false), coalesce(j.att, 0), j.term, coalesce(j.until_ms, 0),
    coalesce(j.paused, false), coalesce(j.seq, 0), j.extra, coalesce(j.xmin::text::bigint, 0), coalesce(j.expires_at > now.t, false),
    coalesce(ceil(extract(epoch FROM j.expires_at - now.t) * 1000000)::bigint, 0), now.t
FROM (SELECT clock_timestamp() AS t) now LEFT JOIN {J} j ON j.key = $1`
	recordSwapSQL = `WITH w AS (
    INSERT INTO {J} AS j (key, slot, open, run, att, term, until_ms, paused, seq, extra, expires_at)
    VALUES ($1, $3, $4, $5, $6, $7, $8, $9, $10, $14, clock_timestamp() + $11::bigint * interval '1 microsecond')
    ON CONFLICT (key) DO UPDATE SET slot = EXCLUDED.slot, open = EXCLUDED.open, run = EXCLUDED.run, att = EXCLUDED.att,
        term = EXCLUDED.term, until_ms = EXCLUDED.until_ms, paused = EXCLUDED.paused, seq = EXCLUDED.seq,
        extra = EXCLUDED.extra, expires_at = EXCLUDED.expires_at
    WHERE j.xmin::text::bigint = $2
    RETURNING 1
), h AS (
    INSERT INTO {H} (key, idx, record) SELECT $1, $12, $13 FROM w WHERE $12::int >= 0
    ON CONFLICT (key, idx) DO UPDATE SET record = EXCLUDED.record
)
SELECT count(*) FROM w`
	recordHistorySQL = `SELECT idx, record FROM {H} WHERE key = $1`
	// jobKeysSQL: the keys of live job records starting with $1.
	jobKeysSQL = `SELECT key FROM {J} WHERE starts_with(key, $1) AND expires_at > clock_timestamp() ORDER BY key`
)

// row is a job's row: a column per field of the record.
type row struct {
	slot, open *int64
	run        bool
	att        int32
	term       *string
	until      int64
	paused     bool
	seq        int64
	extra      map[string]string // fields without a column; nil when none
}

// fields returns the row as a record's fields (see jobrecord.Record).
func (r row) fields() map[string]string {
	f := make(map[string]string, 8)
	if r.slot != nil {
		f["slot"] = strconv.FormatInt(*r.slot, 10)
	}
	if r.open != nil {
		f["open"] = strconv.FormatInt(*r.open, 10)
		f["run"] = "0"
		if r.run {
			f["run"] = "1"
		}
	}
	if r.att != 0 {
		f["att"] = strconv.FormatInt(int64(r.att), 10)
	}
	if r.term != nil {
		f["term"] = *r.term
	}
	if r.until != 0 {
		f["until"] = strconv.FormatInt(r.until, 10)
	}
	if r.paused {
		f["paused"] = "1"
	}
	if r.seq != 0 {
		f["seq"] = strconv.FormatInt(r.seq, 10)
	}
	for name, v := range r.extra {
		if _, ok := f[name]; !ok {
			f[name] = v
		}
	}
	return f
}

// rowOf returns fields as a row: a field without a column goes to extra;
// an integer field that does not parse is an error naming it.
func rowOf(fields map[string]string) (row, error) {
	var r row
	for name, v := range fields {
		num := func() (int64, error) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("job field %s %q is not an integer", name, v)
			}
			return n, nil
		}
		var n int64
		var err error
		switch name {
		case "slot", "open", "att", "until", "seq":
			n, err = num()
		}
		if err != nil {
			return row{}, err
		}
		switch name {
		case "slot":
			r.slot = &n
		case "open":
			r.open = &n
		case "run":
			r.run = v == "1"
		case "att":
			r.att = int32(n)
		case "term":
			r.term = &v
		case "until":
			r.until = n
		case "paused":
			r.paused = v == "1"
		case "seq":
			r.seq = n
		default:
			if r.extra == nil {
				r.extra = make(map[string]string)
			}
			r.extra[name] = v
		}
	}
	return r, nil
}

// load reads key's row.
func (p *Provider) load(ctx context.Context, q pgx.Row) (jobrecord.Stored, error) {
	var r row
	var version, us int64
	var live bool
	var now time.Time
	if err := q.Scan(&r.slot, &r.open, &r.run, &r.att, &r.term, &r.until, &r.paused, &r.seq, &r.extra, &version, &live, &us, &now); err != nil {
		return jobrecord.Stored{}, err
	}
	st := jobrecord.Stored{Version: version, Now: now}
	if live {
		st.Found, st.Fields, st.TTL = true, r.fields(), fromMicros(us)
	}
	return st, nil
}

// LoadRecord implements locking.RecordStore in one statement, on the
// server's clock.
func (p *Provider) LoadRecord(ctx context.Context, key string) (jobrecord.Stored, error) {
	if err := p.begin(ctx, "load record"); err != nil {
		return jobrecord.Stored{}, err
	}
	st, err := p.load(ctx, p.pool.QueryRow(ctx, p.sql.recordLoad, p.mode, key))
	if err != nil {
		return jobrecord.Stored{}, p.opError("load record", ctx, err)
	}
	return st, nil
}

// SwapRecord implements locking.RecordStore in one statement. A row
// written over an expired one keeps the expired record's history rows:
// its runs restart at 1 and overwrite them before they are read.
func (p *Provider) SwapRecord(ctx context.Context, key string, from jobrecord.Stored, w jobrecord.Write) (bool, error) {
	if err := checkTTL("swap record", w.TTL); err != nil {
		return false, err
	}
	r, err := rowOf(w.Fields)
	if err != nil {
		return false, fmt.Errorf("pglock: swap record %q: %w", key, err)
	}
	if err := p.begin(ctx, "swap record"); err != nil {
		return false, err
	}
	idx, entry := -1, ""
	if w.HasEntry {
		idx, entry = w.Index, w.Entry
	}
	var n int64
	err = p.pool.QueryRow(ctx, p.sql.recordSwap, p.mode, key, from.Version,
		r.slot, r.open, r.run, r.att, r.term, r.until, r.paused, r.seq, micros(w.TTL), int32(idx), entry, r.extra).Scan(&n)
	if err != nil {
		return false, p.opError("swap record", ctx, err)
	}
	return n == 1, nil
}

// LoadHistory implements locking.RecordStore in one transaction of two
// reads (a snapshot of both tables).
func (p *Provider) LoadHistory(ctx context.Context, key string) (jobrecord.Stored, map[int]string, error) {
	if err := p.begin(ctx, "history"); err != nil {
		return jobrecord.Stored{}, nil, err
	}
	var st jobrecord.Stored
	entries := make(map[int]string)
	err := pgx.BeginTxFunc(ctx, p.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if st, err = p.load(ctx, tx.QueryRow(ctx, p.sql.recordLoad, p.mode, key)); err != nil || !st.Found {
			return err
		}
		rows, err := tx.Query(ctx, p.sql.recordHistory, p.mode, key)
		if err != nil {
			return err
		}
		var idx int32
		var rec string
		_, err = pgx.ForEachRow(rows, []any{&idx, &rec}, func() error {
			entries[int(idx)] = rec
			return nil
		})
		return err
	})
	if err != nil {
		return jobrecord.Stored{}, nil, p.opError("history", ctx, err)
	}
	return st, entries, nil
}

// JobKeys lists the keys starting with prefix (provider keys, as
// locking.DistributedLock.JobKey returns them) that have a live job record,
// sorted: for operators' tools such as the hostloom CLI's jobs verb, which
// has no other way to list jobs. One statement.
func (p *Provider) JobKeys(ctx context.Context, prefix string) ([]string, error) {
	if err := p.begin(ctx, "job keys"); err != nil {
		return nil, err
	}
	rows, err := p.pool.Query(ctx, p.sql.jobKeys, p.mode, prefix)
	if err != nil {
		return nil, p.opError("job keys", ctx, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, p.opError("job keys", ctx, err)
	}
	return out, nil
}
