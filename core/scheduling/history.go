package scheduling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// ErrNoJobStore is returned by Pause, Resume and History of a scheduler
// whose slot store keeps no job records (see WithSlotStore).
var ErrNoJobStore = errors.New("scheduling: the slot store keeps no job records (needs a slotstore.Jobs such as *locking.DistributedLock over redislock or memlock)")

// SlotStateTTL is the shortest time to live of a job's records in the slot
// store: every claim, completion, pause and resume sets it to the longest
// of SlotStateTTL, three intervals of the job's schedule and twice the
// misfire window. A job nobody runs or touches for that long loses its
// records (latest slot, pause, history); a slot older than the misfire
// window is never run again either way.
const SlotStateTTL = 7 * 24 * time.Hour

// JobKey is the slot store key of a job of a role: "sched:{role}:{job}"
// (under the store's namespace; see locking.DistributedLock.JobKey and
// StateStore keys).
func JobKey(role, job string) string { return slotKeyPrefix + role + ":" + job }

// record is a RunRecord as the store keeps it (JSON; times in Unix
// milliseconds, start and end in microseconds).
type record struct {
	Slot     int64  `json:"slot"`
	Started  int64  `json:"start"`
	Ended    int64  `json:"end,omitempty"`
	Identity string `json:"id"`
	Fence    uint64 `json:"fence,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
	Attempt  int    `json:"attempt"`
	Schedule string `json:"sched,omitempty"`
}

// encode returns r as the store keeps it.
func (r RunRecord) encode() string {
	rec := record{Slot: r.Slot.UnixMilli(), Started: r.Started.UnixMicro(), Identity: r.Identity, Fence: r.Fence, Attempt: r.Attempt, Schedule: r.Schedule}
	if !r.Ended.IsZero() {
		rec.Ended = r.Ended.UnixMicro()
	}
	if r.Outcome != 0 {
		rec.Outcome = r.Outcome.String()
	}
	b, _ := json.Marshal(rec) // strings and numbers: never fails
	return string(b)
}

// ParseRunRecord decodes a history record as the slot store keeps it
// (slotstore.Jobs.JobHistory). It fails, naming what is wrong, for a
// record that does not parse.
func ParseRunRecord(s string) (RunRecord, error) {
	var rec record
	if err := json.Unmarshal([]byte(s), &rec); err != nil {
		return RunRecord{}, fmt.Errorf("scheduling: run record %.80q: %w", s, err)
	}
	if rec.Slot <= 0 || rec.Started <= 0 || rec.Attempt < 1 {
		return RunRecord{}, fmt.Errorf("scheduling: run record %.80q: slot, start and attempt are required", s)
	}
	r := RunRecord{
		Slot:     time.UnixMilli(rec.Slot),
		Started:  time.UnixMicro(rec.Started),
		Identity: rec.Identity,
		Fence:    rec.Fence,
		Attempt:  rec.Attempt,
		Schedule: rec.Schedule,
	}
	if rec.Ended > 0 {
		r.Ended = time.UnixMicro(rec.Ended)
	}
	if rec.Outcome != "" {
		o, ok := outcomeNamed(rec.Outcome)
		if !ok {
			return RunRecord{}, fmt.Errorf("scheduling: run record %.80q: unknown outcome %q", s, rec.Outcome)
		}
		r.Outcome = o
	}
	return r, nil
}

func outcomeNamed(name string) (Outcome, bool) {
	for o := Success; o < outcomeCount; o++ {
		if o.String() == name {
			return o, true
		}
	}
	return 0, false
}

// keepsJobs reports whether store keeps job records: it is set and, when
// it reports its features (a *locking.DistributedLock), has Jobs.
func keepsJobs(store slotstore.Jobs) bool {
	return jobsOf(store) != nil
}

// jobsOf is the job records capability of store (X3): store's
// locking.Features.Jobs when it reports its features (a
// *locking.DistributedLock, whose method set is the same whatever its
// provider keeps), else store itself when it is a slotstore.Jobs; nil
// when it keeps none.
func jobsOf(store any) slotstore.Jobs {
	if r, ok := store.(interface{ Features() locking.Features }); ok {
		return r.Features().Jobs
	}
	js, _ := store.(slotstore.Jobs)
	return js
}

// ReadHistory reads up to n (1..slotstore.JobHistoryLen) of the newest runs
// of job of role from store, newest first, without a Scheduler (for
// tools such as the hostloom CLI). Records that do not parse are skipped
// and returned joined in skipped.
func ReadHistory(ctx context.Context, store slotstore.Jobs, role, job string, n int) (runs []RunRecord, skipped error, err error) {
	if n < 1 || n > slotstore.JobHistoryLen {
		return nil, nil, fmt.Errorf("scheduling: history of job %q: n %d must be in 1..%d", job, n, slotstore.JobHistoryLen)
	}
	if !keepsJobs(store) {
		return nil, nil, ErrNoJobStore
	}
	raw, err := store.JobHistory(ctx, JobKey(role, job), n)
	if err != nil {
		return nil, nil, fmt.Errorf("scheduling: history of job %q: %w", job, err)
	}
	runs = make([]RunRecord, 0, len(raw))
	var bad []error
	for _, s := range raw {
		r, err := ParseRunRecord(s)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		runs = append(runs, r)
	}
	return runs, errors.Join(bad...), nil
}

// SetPaused pauses or resumes job of role in store without a Scheduler (for
// tools such as the hostloom CLI), with the same effect as Scheduler.Pause
// and Resume. A job the store has no records of is an error naming it
// (there is nothing to pause: a typo would otherwise create records).
func SetPaused(ctx context.Context, store slotstore.Jobs, role, job string, paused bool) error {
	if !keepsJobs(store) {
		return ErrNoJobStore
	}
	key := JobKey(role, job)
	st, err := store.JobStatus(ctx, key)
	if err != nil {
		return fmt.Errorf("scheduling: job %q: %w", job, err)
	}
	if !st.HasSlot && st.Runs == 0 && !st.Paused {
		return fmt.Errorf("scheduling: no records of job %q of role %q", job, role)
	}
	if err := store.SetJobPaused(ctx, key, paused, max(SlotStateTTL, st.TTL)); err != nil {
		return fmt.Errorf("scheduling: job %q: %w", job, err)
	}
	return nil
}

// lookup returns the job named name and the job store, or an error naming
// the job.
func (s *Scheduler) lookup(op, name string) (*job, error) {
	var j *job
	s.ask(func() { j = s.jobs[name] })
	if j == nil {
		return nil, fmt.Errorf("scheduling: %s: unknown job %q of role %q", op, name, s.role)
	}
	if s.js == nil {
		return nil, fmt.Errorf("scheduling: %s job %q: %w", op, name, ErrNoJobStore)
	}
	return j, nil
}

// History returns up to n (1..100, slotstore.JobHistoryLen) of the job's
// newest runs, newest first, from the slot store: runs of every replica,
// kept as long as the job's records (SlotStateTTL). A record that does not
// parse is skipped and logged once per job. It fails for n out of range,
// an unknown job (naming it) and a store without job records
// (ErrNoJobStore).
func (s *Scheduler) History(ctx context.Context, job string, n int) ([]RunRecord, error) {
	if n < 1 || n > slotstore.JobHistoryLen {
		return nil, fmt.Errorf("scheduling: history of job %q: n %d must be in 1..%d", job, n, slotstore.JobHistoryLen)
	}
	j, err := s.lookup("history", job)
	if err != nil {
		return nil, err
	}
	runs, skipped, err := ReadHistory(ctx, s.js, s.role, job, n)
	if err != nil {
		return nil, err
	}
	if skipped != nil && j.badRecord.CompareAndSwap(false, true) {
		s.log.Warn("SchedulerHistoryRecordSkipped", zap.String("job", job), zap.Error(skipped))
	}
	return runs, nil
}

// Pause pauses the job on every replica, through the slot store (S10): the
// leader reads the paused state with every claim, in the same atomic step,
// so no slot of the job starts after Pause returned, on any replica (a run
// already going is not cancelled). Paused slots are skipped (reason
// paused) and recorded as passed: they are never caught up after Resume.
// It fails for an unknown job, naming it, and without job records
// (ErrNoJobStore).
func (s *Scheduler) Pause(ctx context.Context, job string) error {
	return s.setPaused(ctx, job, true)
}

// Resume undoes Pause: the job's next slot runs as usual. Slots that fell
// due while it was paused are not run.
func (s *Scheduler) Resume(ctx context.Context, job string) error {
	return s.setPaused(ctx, job, false)
}

func (s *Scheduler) setPaused(ctx context.Context, name string, paused bool) error {
	op := "resume"
	if paused {
		op = "pause"
	}
	j, err := s.lookup(op, name)
	if err != nil {
		return err
	}
	if err := s.js.SetJobPaused(ctx, j.key, paused, j.ttl); err != nil {
		return fmt.Errorf("scheduling: %s job %q: %w", op, name, err)
	}
	s.ask(func() { j.paused = paused })
	if paused {
		s.log.Info("SchedulerJobPaused", zap.String("job", name))
	} else {
		s.log.Info("SchedulerJobResumed", zap.String("job", name))
	}
	return nil
}
