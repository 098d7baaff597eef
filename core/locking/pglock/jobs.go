package pglock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// The job records (slotstore.Jobs): the semantics of redislock's
// jobs_*.lua, on the tables {J} (one row per job) and {H} (its history
// ring). A claim, a completion and a pause are one transaction each: the
// job's row is created when missing, locked FOR UPDATE with the server's
// clock read after the lock is granted, decided on in Go (jobClaim,
// jobComplete: the scripts' logic, line for line), and written back with
// its history record in one batch. Reads are one statement.

// The job statements. jobCreateSQL creates the job's row when missing
// (void: already expired); jobLockSQL locks it and reads it with the
// server's time in ms and whether it has expired (then every field counts
// as absent, as for an expired Redis key).
const (
	jobCreateSQL = `INSERT INTO {J} (key, expires_at) VALUES ($1, '-infinity') ON CONFLICT (key) DO NOTHING`
	jobLockSQL   = `WITH locked AS MATERIALIZED (
    SELECT slot, open, run, att, term, until_ms, paused, seq, expires_at FROM {J} WHERE key = $1 FOR UPDATE
),
now AS MATERIALIZED (SELECT clock_timestamp() AS t FROM locked)
SELECT locked.slot, locked.open, locked.run, locked.att, locked.term, locked.until_ms, locked.paused, locked.seq,
    locked.expires_at <= now.t, (extract(epoch FROM now.t) * 1000)::bigint
FROM locked, now`
	// jobWriteSQL stores the row, expiring $10 µs from now.
	jobWriteSQL = `UPDATE {J} SET slot = $2, open = $3, run = $4, att = $5, term = $6, until_ms = $7, paused = $8, seq = $9,
    expires_at = clock_timestamp() + $10::bigint * interval '1 microsecond'
WHERE key = $1`
	jobClearRunsSQL = `DELETE FROM {H} WHERE key = $1`
	jobRecordSQL    = `INSERT INTO {H} (key, idx, record) VALUES ($1, $2, $3)
ON CONFLICT (key, idx) DO UPDATE SET record = EXCLUDED.record`
	jobStatusSQL = `SELECT j.slot, j.open, j.run, j.att, j.paused, j.seq,
    ceil(extract(epoch FROM j.expires_at - now.t) * 1000000)::bigint
FROM {J} j, (SELECT clock_timestamp() AS t) now WHERE j.key = $1 AND j.expires_at > now.t`
	// jobKeysSQL: the keys of live job records starting with $1.
	jobKeysSQL = `SELECT key FROM {J} WHERE starts_with(key, $1) AND expires_at > clock_timestamp() ORDER BY key`
	// jobHistorySQL: up to $2 records, newest first, from seq down.
	jobHistorySQL = `WITH j AS (SELECT seq FROM {J} WHERE key = $1 AND expires_at > clock_timestamp()),
s AS (SELECT g FROM j, generate_series(j.seq, greatest(j.seq - least($2::int, $3::int) + 1, 1), -1) g WHERE j.seq > 0)
SELECT h.record FROM s JOIN {H} h ON h.key = $1 AND h.idx = ((s.g - 1) % $3::int)::int ORDER BY s.g DESC`
)

// jobRow is a job's record set as stored; the zero value is an absent (or
// expired) one.
type jobRow struct {
	slot, open *int64 // latest recorded slot; unfinished slot
	run        bool   // the unfinished attempt has not reported its end
	att        int32
	term       *string
	until      int64 // server ms at which the claiming term certainly ended
	paused     bool
	seq        int64 // records written
}

// jobWrite is what a decision writes: the row (nil: nothing) and the
// history record at seq (0: none). Writing over an expired record set
// first deletes its history.
type jobWrite struct {
	row    *jobRow
	seq    int64
	record string
}

// inJob runs decide on key's locked row in one transaction and writes
// what it returns with time to live ttl.
func (p *Provider) inJob(ctx context.Context, op, key string, ttl time.Duration, decide func(r jobRow, now int64) jobWrite) error {
	if err := p.begin(ctx, op); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, p.sql.jobCreate, p.mode, key); err != nil {
			return err
		}
		var r jobRow
		var expired bool
		var now int64
		err := tx.QueryRow(ctx, p.sql.jobLock, p.mode, key).
			Scan(&r.slot, &r.open, &r.run, &r.att, &r.term, &r.until, &r.paused, &r.seq, &expired, &now)
		if err != nil {
			return err
		}
		if expired {
			r = jobRow{}
		}
		w := decide(r, now)
		if w.row == nil {
			return nil
		}
		b := &pgx.Batch{}
		if expired {
			b.Queue(p.sql.jobClearRuns, key)
		}
		n := w.row
		b.Queue(p.sql.jobWrite, key, n.slot, n.open, n.run, n.att, n.term, n.until, n.paused, n.seq, micros(ttl))
		if w.seq > 0 {
			b.Queue(p.sql.jobRecord, key, int32((w.seq-1)%slotstore.JobHistoryLen), w.record)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return p.opError(op, ctx, err)
	}
	return nil
}

func eq(a *int64, b int64) bool { return a != nil && *a == b }

// jobClaim is jobs_claim.lua's decision.
func jobClaim(r jobRow, now int64, c slotstore.SlotClaim) (slotstore.SlotClaimResult, jobWrite) {
	var res slotstore.SlotClaimResult
	if r.slot != nil {
		res.Previous, res.HasPrevious = *r.slot, true
	}
	var wait int64
	if r.run && now < r.until {
		wait = r.until - now
	}
	ownTerm := r.term != nil && *r.term == c.Term
	n := r
	if r.paused {
		res.Status = slotstore.ClaimPaused
		if c.Attempt == 1 && c.Slot != 0 && (r.slot == nil || *r.slot < c.Slot) {
			n.slot = &c.Slot
			return res, jobWrite{row: &n}
		}
		return res, jobWrite{}
	}
	if c.Attempt > 1 {
		if !eq(r.open, c.Slot) || int(r.att) != c.Attempt-1 || c.Attempt > slotstore.MaxJobAttempts || ownTerm {
			res.Status = slotstore.ClaimRefused
			return res, jobWrite{}
		}
		if wait > 0 {
			res.Status, res.Wait, res.Attempt = slotstore.ClaimWait, time.Duration(wait)*time.Millisecond, int(r.att)
			return res, jobWrite{}
		}
	} else {
		if c.Recover && r.open != nil && !ownTerm && int(r.att) < slotstore.MaxJobAttempts {
			res.Status, res.Wait, res.Attempt, res.Slot = slotstore.ClaimRecoverable, time.Duration(wait)*time.Millisecond, int(r.att), *r.open
			return res, jobWrite{}
		}
		if c.Slot == 0 || (r.slot != nil && *r.slot >= c.Slot) {
			res.Status = slotstore.ClaimStarted
			return res, jobWrite{}
		}
		n.slot = &c.Slot
	}
	term := c.Term
	n.seq++
	n.open, n.run, n.att, n.term, n.until = &c.Slot, true, int32(c.Attempt), &term, now+c.Hold.Milliseconds()
	res.Status, res.Attempt, res.Seq = slotstore.ClaimGranted, c.Attempt, n.seq
	return res, jobWrite{row: &n, seq: n.seq, record: c.Record}
}

// ClaimSlot implements slotstore.Jobs in one transaction (see
// jobClaim). The hold is measured on the server's clock.
func (p *Provider) ClaimSlot(ctx context.Context, key string, c slotstore.SlotClaim) (slotstore.SlotClaimResult, error) {
	if err := checkTTL("claim", c.TTL); err != nil {
		return slotstore.SlotClaimResult{}, err
	}
	var res slotstore.SlotClaimResult
	err := p.inJob(ctx, "claim", key, c.TTL, func(r jobRow, now int64) jobWrite {
		var w jobWrite
		res, w = jobClaim(r, now, c)
		return w
	})
	if err != nil {
		return slotstore.SlotClaimResult{}, err
	}
	return res, nil
}

// CompleteSlot implements slotstore.Jobs in one transaction
// (jobs_complete.lua's decision).
func (p *Provider) CompleteSlot(ctx context.Context, key string, c slotstore.SlotCompletion) (bool, error) {
	if err := checkTTL("complete", c.TTL); err != nil {
		return false, err
	}
	var matched bool
	err := p.inJob(ctx, "complete", key, c.TTL, func(r jobRow, _ int64) jobWrite {
		if r == (jobRow{}) {
			return jobWrite{} // nothing stored: nothing to complete
		}
		n := r
		if eq(r.open, c.Slot) && int(r.att) == c.Attempt && r.term != nil && *r.term == c.Term {
			matched = true
			if c.Done {
				n.open, n.run = nil, false
			} else {
				n.run = false
			}
		}
		w := jobWrite{row: &n}
		if c.Seq > 0 && c.Seq <= r.seq && c.Seq > r.seq-slotstore.JobHistoryLen {
			w.seq, w.record = c.Seq, c.Record
		}
		return w
	})
	return matched, err
}

// SetJobPaused implements slotstore.Jobs in one transaction.
func (p *Provider) SetJobPaused(ctx context.Context, key string, paused bool, ttl time.Duration) error {
	if err := checkTTL("pause", ttl); err != nil {
		return err
	}
	return p.inJob(ctx, "pause", key, ttl, func(r jobRow, _ int64) jobWrite {
		r.paused = paused
		return jobWrite{row: &r}
	})
}

// JobStatus implements slotstore.Jobs in one statement.
func (p *Provider) JobStatus(ctx context.Context, key string) (slotstore.JobStatus, error) {
	if err := p.begin(ctx, "job status"); err != nil {
		return slotstore.JobStatus{}, err
	}
	var st slotstore.JobStatus
	var slot, open *int64
	var att int32
	var us int64
	err := p.pool.QueryRow(ctx, p.sql.jobStatus, p.mode, key).Scan(&slot, &open, &st.Running, &att, &st.Paused, &st.Runs, &us)
	if errors.Is(err, pgx.ErrNoRows) {
		return slotstore.JobStatus{}, nil
	}
	if err != nil {
		return slotstore.JobStatus{}, p.opError("job status", ctx, err)
	}
	if slot != nil {
		st.Slot, st.HasSlot = *slot, true
	}
	if open != nil {
		st.Unfinished = *open
	}
	st.Running = st.Running && st.Unfinished != 0
	st.Attempt, st.TTL = int(att), fromMicros(us)
	return st, nil
}

// JobHistory implements slotstore.Jobs in one statement.
func (p *Provider) JobHistory(ctx context.Context, key string, n int) ([]string, error) {
	if err := p.begin(ctx, "history"); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("pglock: history %q: n %d must be positive", key, n)
	}
	rows, err := p.pool.Query(ctx, p.sql.jobHistory, p.mode, key, int32(min(n, slotstore.JobHistoryLen)), int32(slotstore.JobHistoryLen))
	if err != nil {
		return nil, p.opError("history", ctx, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, p.opError("history", ctx, err)
	}
	return out, nil
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
