package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
)

// runJSON is one run record (S11).
type runJSON struct {
	Slot     time.Time  `json:"slot"`
	Started  time.Time  `json:"started"`
	Ended    *time.Time `json:"ended,omitempty"`
	Duration float64    `json:"duration_ms,omitempty"`
	Identity string     `json:"identity"`
	Fence    uint64     `json:"fence,omitempty"`
	Attempt  int        `json:"attempt"`
	// Outcome is success, failure, panic, timeout, canceled, or running
	// for a run that has not reported its end.
	Outcome string `json:"outcome"`
}

func runOf(r scheduling.RunRecord) runJSON {
	j := runJSON{Slot: r.Slot.UTC(), Started: r.Started.UTC(), Identity: r.Identity, Fence: r.Fence, Attempt: r.Attempt, Outcome: "running"}
	if !r.Ended.IsZero() {
		end := r.Ended.UTC()
		j.Ended = &end
		j.Duration = float64(r.Ended.Sub(r.Started).Microseconds()) / 1000
		j.Outcome = r.Outcome.String()
	}
	return j
}

// jobJSON is one job in jobs JSON.
type jobJSON struct {
	Role    string `json:"role"`
	Job     string `json:"job"`
	Paused  bool   `json:"paused"`
	Running bool   `json:"running"`
	// LastSlot is the latest slot a run was started for.
	LastSlot *time.Time `json:"last_slot,omitempty"`
	// PausedSlot is the latest slot that fell due while the job was paused
	// and was not run, when it is newer than LastSlot.
	PausedSlot *time.Time `json:"paused_slot,omitempty"`
	// Runs is how many runs were ever recorded.
	Runs    int64    `json:"runs"`
	LastRun *runJSON `json:"last_run,omitempty"`
	// Schedule is the job's schedule as its newest run record keeps it
	// (scheduling.ScheduleSpec); absent when no run recorded one.
	Schedule string `json:"schedule,omitempty"`
	// NextRun is the schedule's next slot after now, when the schedule is
	// one the CLI can compute (Every or Cron). A paused job's next slot
	// is shown too; it will not run unless the job is resumed before.
	NextRun *time.Time `json:"next_run,omitempty"`
}

type jobRef struct{ role, job string }

func newJobs(g *globals, sio stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "jobs [ROLE]",
		Short: "List the scheduler's jobs: schedule, next run, state, last slot and run",
		Long: `jobs lists the exclusive scheduler's jobs of every role (or of ROLE) that
the job store (the slot store, in the backend's server) keeps records for: its schedule
and next run, whether the job
is paused (on every replica), whether a run is going, the latest slot that
ran, the number of runs and the newest run's outcome. A slot that fell due
while the job was paused is not run: it shows in STATE ("paused, skipped
SLOT"; paused_slot in JSON), not as the last slot.

SCHEDULE is the one the newest run record keeps (with the zone a cron
expression is read in: "CRON_TZ=UTC */5 * * * *"); NEXT RUN is its next
slot after now, shown for a paused job too (it will not run unless the job
is resumed first). A job that has not run since its scheduler started
keeping schedules shows "-" for both. -o wide adds the newest run's
duration, fence and attempt.

A job appears once its scheduler recorded something: a run, or a pause. Its
records expire when nobody runs or touches it for a week
(scheduling.SlotStateTTL) or three of its intervals, whichever is longer.`,
		Example: `  hostloom jobs -config app.yaml
  hostloom jobs billing -o json
  hostloom jobs -o wide`,
		Args: cobra.MaximumNArgs(1),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			role := ""
			if len(args) == 1 {
				role = args[0]
			}
			return jobs(cmd.Context(), g, sio, role)
		}),
	}
}

func jobs(ctx context.Context, g *globals, sio stdio, role string) error {
	return withEnv(ctx, g, sio, func(e *env) error {
		refs, err := e.jobRefs(ctx, role)
		if err != nil {
			return err
		}
		if role != "" && len(refs) == 0 {
			if _, err := e.lookup(ctx, role); err != nil {
				return err
			}
		}
		out := []jobJSON{}
		for _, ref := range refs {
			j, err := e.job(ctx, ref)
			if err != nil {
				return err
			}
			out = append(out, j)
		}
		if g.structured() {
			return g.write(sio.out, struct {
				Namespace string    `json:"namespace"`
				Jobs      []jobJSON `json:"jobs"`
			}{e.namespace(), out})
		}
		if len(out) == 0 {
			fmt.Fprintf(sio.out, "No jobs recorded in %s.\n", e.namespaceRead())
			return nil
		}
		tw := newTable(sio.out)
		head := "ROLE\tJOB\tSCHEDULE\tNEXT RUN\tSTATE\tLAST SLOT\tRUNS\tLAST RUN\tOUTCOME\tBY"
		if g.wide() {
			head += "\tDURATION\tFENCE\tATTEMPT"
		}
		fmt.Fprintln(tw, head)
		// LAST SLOT is the latest slot that ran; one that passed while the
		// job was paused shows in STATE ("paused, skipped <slot>").
		for _, j := range out {
			state := "active"
			switch {
			case j.Paused && j.PausedSlot != nil:
				state = "paused, skipped " + showTime(*j.PausedSlot)
			case j.Paused:
				state = "paused"
			case j.Running:
				state = "running"
			}
			slot, started, outcome, by, next := dash, dash, dash, dash, dash
			if j.LastSlot != nil {
				slot = showTime(*j.LastSlot)
			}
			if j.NextRun != nil {
				next = showTime(*j.NextRun)
			}
			if j.LastRun != nil {
				started, outcome, by = showTime(j.LastRun.Started), j.LastRun.Outcome, j.LastRun.Identity
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s", j.Role, j.Job, showString(j.Schedule), next, state, slot, j.Runs, started, outcome, by)
			if g.wide() {
				d, fence, attempt := dash, dash, dash
				if r := j.LastRun; r != nil {
					if r.Ended != nil {
						d = showDuration(r.Ended.Sub(r.Started))
					}
					fence, attempt = showUint(r.Fence), fmt.Sprint(r.Attempt)
				}
				fmt.Fprintf(tw, "\t%s\t%s\t%s", d, fence, attempt)
			}
			fmt.Fprintln(tw)
		}
		return tw.Flush()
	})
}

// job reads one job's status and newest run.
func (e *env) job(ctx context.Context, ref jobRef) (jobJSON, error) {
	rctx, cancel := e.request(ctx)
	defer cancel()
	st, err := e.lock.JobStatus(rctx, scheduling.JobKey(ref.role, ref.job))
	if err != nil {
		return jobJSON{}, err
	}
	j := jobJSON{Role: ref.role, Job: ref.job, Paused: st.Paused, Running: st.Running, Runs: st.Runs}
	if st.Runs > 0 {
		runs, skipped, err := scheduling.ReadHistory(rctx, e.lock, ref.role, ref.job, 1)
		if err != nil {
			return jobJSON{}, err
		}
		e.warnSkipped(skipped)
		if len(runs) > 0 {
			r := runOf(runs[0])
			j.LastRun = &r
			j.LastSlot = &r.Slot
			j.Schedule = runs[0].Schedule
			if sched, err := scheduling.Cron(j.Schedule); err == nil && j.Schedule != "" {
				if next := sched.Next(time.Now()); !next.IsZero() {
					next = next.UTC()
					j.NextRun = &next
				}
			}
		}
	}
	// The store's slot is the latest recorded: claimed (a run record was
	// written with it) or passed while paused (no record). A slot newer
	// than the newest run's was not run: it passed while paused.
	if st.HasSlot {
		t := time.UnixMilli(st.Slot).UTC()
		if j.LastSlot == nil || t.After(*j.LastSlot) {
			j.PausedSlot = &t
		}
	}
	return j, nil
}

// warnSkipped reports history records that do not parse, once each.
func (e *env) warnSkipped(skipped error) {
	if skipped != nil {
		for line := range strings.SplitSeq(skipped.Error(), "\n") {
			fmt.Fprintf(e.stderr, "hostloom: warning: skipped %s\n", line)
		}
	}
}

// jobRefs lists the jobs the job store keeps records for, of role or of
// every role, sorted. The store has no listing of its own: the backend's
// JobKeys lists the job keys under the namespace's prefix (over Redis a
// SCAN of the keyspace, like locking.DistributedLock.Keys does for
// leases: for operators' tools, not hot paths).
func (e *env) jobRefs(ctx context.Context, role string) ([]jobRef, error) {
	const probe = "x"
	full, err := e.lock.JobKey(scheduling.JobKey(role, probe))
	if err != nil {
		return nil, fmt.Errorf("role %q: %w", role, err)
	}
	prefix := strings.TrimSuffix(full, probe) // ...jobs:sched:{role}: or ...jobs:sched::
	if role == "" {
		prefix = strings.TrimSuffix(prefix, ":")
	}
	if e.session.JobKeys == nil {
		return nil, fmt.Errorf("list jobs: provider %s cannot list its job records", e.cfg.Locking.Provider)
	}
	rctx, cancel := e.request(ctx)
	defer cancel()
	keys, err := e.session.JobKeys(rctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			seen[rest] = true
		}
	}
	var known []string
	if role == "" {
		roles, err := e.list(ctx, nil)
		if err != nil {
			return nil, err
		}
		for _, rk := range roles {
			known = append(known, rk.role)
		}
	}
	refs := make([]jobRef, 0, len(seen))
	for rest := range seen {
		if role != "" {
			refs = append(refs, jobRef{role: role, job: rest})
			continue
		}
		if ref, ok := splitJob(rest, known); ok {
			refs = append(refs, ref)
		}
	}
	slices.SortFunc(refs, func(a, b jobRef) int {
		if c := strings.Compare(a.role, b.role); c != 0 {
			return c
		}
		return strings.Compare(a.job, b.job)
	})
	return refs, nil
}

// splitJob splits "role:job" (scheduling.JobKey without its prefix). Role
// and job names may both hold ':', so the longest role the namespace knows
// wins; otherwise the first ':' splits.
func splitJob(s string, known []string) (jobRef, bool) {
	best := ""
	for _, r := range known {
		if strings.HasPrefix(s, r+":") && len(r) > len(best) && len(s) > len(r)+1 {
			best = r
		}
	}
	if best != "" {
		return jobRef{role: best, job: s[len(best)+1:]}, true
	}
	role, job, ok := strings.Cut(s, ":")
	return jobRef{role: role, job: job}, ok && role != "" && job != ""
}

// errNoSuchJob is matched by the error for a job with nothing stored.
var errNoSuchJob = errors.New("no such job")

// knownJob checks that the store keeps records for job of role.
func (e *env) knownJob(ctx context.Context, role, job string) (slotstore.JobStatus, error) {
	rctx, cancel := e.request(ctx)
	defer cancel()
	st, err := e.lock.JobStatus(rctx, scheduling.JobKey(role, job))
	if err != nil {
		return st, err
	}
	if !st.HasSlot && st.Runs == 0 && !st.Paused { // the rule of scheduling.SetPaused
		if _, err := e.lookup(ctx, role); err != nil {
			return st, err
		}
		return st, fmt.Errorf("%w %q of role %q in namespace %q (a job appears once its scheduler recorded a run or a pause)", errNoSuchJob, job, role, e.namespace())
	}
	return st, nil
}

func newHistory(g *globals, sio stdio) *cobra.Command {
	var limit int
	c := &cobra.Command{
		Use:   "history ROLE JOB",
		Short: "Show a job's latest runs, newest first",
		Long: `history shows the newest runs of JOB of ROLE from the job store, newest
first: the slot each run was for, when it started, how long it took, the
replica that ran it, the term's fence, the attempt (2 and more are
recoveries of a run whose leader was lost) and the outcome. The store keeps the last 100 runs per job.`,
		Example: `  hostloom history billing invoices -config app.yaml
  hostloom history billing invoices --limit 5 --json`,
		Args: exactArgs("ROLE", "JOB"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return history(cmd.Context(), g, sio, args[0], args[1], limit)
		}),
	}
	c.Flags().IntVarP(&limit, "limit", "n", 20, fmt.Sprintf("how many runs, 1..%d", slotstore.JobHistoryLen))
	return c
}

func history(ctx context.Context, g *globals, sio stdio, role, job string, limit int) error {
	if limit < 1 || limit > slotstore.JobHistoryLen {
		return badUsage("--limit %d must be in 1..%d", limit, slotstore.JobHistoryLen)
	}
	return withEnv(ctx, g, sio, func(e *env) error {
		if _, err := e.knownJob(ctx, role, job); err != nil {
			return err
		}
		rctx, cancel := e.request(ctx)
		defer cancel()
		runs, skipped, err := scheduling.ReadHistory(rctx, e.lock, role, job, limit)
		if err != nil {
			return err
		}
		e.warnSkipped(skipped)
		out := make([]runJSON, len(runs))
		for i, r := range runs {
			out[i] = runOf(r)
		}
		if g.structured() {
			return g.write(sio.out, struct {
				Role string    `json:"role"`
				Job  string    `json:"job"`
				Runs []runJSON `json:"runs"`
			}{role, job, out})
		}
		if len(out) == 0 {
			fmt.Fprintf(sio.out, "No runs of job %s of role %s recorded.\n", job, role)
			return nil
		}
		tw := newTable(sio.out)
		fmt.Fprintln(tw, "SLOT\tSTARTED\tDURATION\tIDENTITY\tFENCE\tATTEMPT\tOUTCOME")
		for _, r := range out {
			d := dash
			if r.Ended != nil {
				d = showDuration(r.Ended.Sub(r.Started))
				if d == dash {
					d = "0s"
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", showTime(r.Slot), showTime(r.Started), d, r.Identity, showUint(r.Fence), r.Attempt, r.Outcome)
		}
		return tw.Flush()
	})
}

func newPause(g *globals, sio stdio, paused bool) *cobra.Command {
	verb, short, long := "resume", "Resume a paused job on every replica", `resume undoes pause: the job's next slot runs as usual, on whichever
replica leads its role. Slots that fell due while it was paused are not run.`
	if paused {
		verb, short, long = "pause", "Pause a job on every replica", `pause pauses JOB of ROLE cluster-wide, through the job store: the
leader reads the paused state with every slot claim, so no slot of the job
starts after pause returned, on any replica. A run already going is not
cancelled. Paused slots are skipped (reason paused) and recorded as passed:
resume does not catch them up.`
	}
	return &cobra.Command{
		Use:     verb + " ROLE JOB",
		Short:   short,
		Long:    long,
		Example: fmt.Sprintf("  hostloom %s billing invoices -config app.yaml", verb),
		Args:    exactArgs("ROLE", "JOB"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return setPaused(cmd.Context(), g, sio, args[0], args[1], paused)
		}),
	}
}

func setPaused(ctx context.Context, g *globals, sio stdio, role, job string, paused bool) error {
	return withEnv(ctx, g, sio, func(e *env) error {
		st, err := e.knownJob(ctx, role, job)
		if err != nil {
			return err
		}
		rctx, cancel := e.request(ctx)
		defer cancel()
		if err := scheduling.SetPaused(rctx, e.lock, role, job, paused); err != nil {
			return err
		}
		word := "Resumed"
		if paused {
			word = "Paused"
		}
		if g.structured() {
			return g.write(sio.out, struct {
				Role      string `json:"role"`
				Job       string `json:"job"`
				Paused    bool   `json:"paused"`
				WasPaused bool   `json:"was_paused"`
				Namespace string `json:"namespace"`
			}{role, job, paused, st.Paused, e.namespace()})
		}
		note := ""
		if st.Paused == paused {
			note = " (it already was)"
		}
		fmt.Fprintf(sio.out, "%s job %s of role %s%s.\n", word, job, role, note)
		return nil
	})
}
