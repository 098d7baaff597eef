package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/scheduling"
)

// act is an action's kind.
type act int

const (
	actPause act = iota + 1
	actResume
	actResign
	actHandOver
)

func (a act) String() string {
	switch a {
	case actPause:
		return "pause"
	case actResume:
		return "resume"
	case actResign:
		return "resign"
	case actHandOver:
		return "handover"
	default:
		return "unknown"
	}
}

// actionError is a refusal: the status and what the page says.
type actionError struct {
	status int
	msg    string
}

func (e *actionError) Error() string { return e.msg }

func refuse(status int, format string, args ...any) error {
	return &actionError{status: status, msg: fmt.Sprintf(format, args...)}
}

// action serves one action's post: credential, token, input, then the
// change, each refusal a page that says what was wrong and that nothing
// changed, every attempt recorded.
func (d *Dashboard) action(a act) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e := AuditEntry{
			At: d.now(), Action: a.String(), Role: r.PostFormValue("role"), Job: r.PostFormValue("job"),
			Target: r.PostFormValue("to"), Note: r.PostFormValue("note"),
		}
		back := "roles"
		if a == actPause || a == actResume {
			back = "jobs"
		}
		s := d.session(r)
		if s != nil {
			e.Who = s.name
		}
		msg, err := d.do(r, a, s, &e)
		if err != nil {
			status := http.StatusInternalServerError
			var ae *actionError
			if errors.As(err, &ae) {
				status = ae.status
			}
			if len(e.Note) > MaxNote { // not kept whole: the log is no store
				e.Note = e.Note[:MaxNote] + "…"
			}
			e.Outcome, e.Detail = "refused", err.Error()
			d.record(r, e)
			msg := err.Error()
			if !strings.HasSuffix(msg, ".") {
				msg += "."
			}
			d.answer(w, r, status, back, "Refused: "+msg+" Nothing was changed.")
			return
		}
		e.Outcome, e.Detail = "done", msg
		d.record(r, e)
		d.forget()
		if a == actPause || a == actResume {
			d.mu.Lock()
			ref := JobRef{Role: e.Role, Job: e.Job}
			if a == actPause {
				d.pauses[ref] = e
			} else {
				delete(d.pauses, ref)
			}
			d.mu.Unlock()
		}
		d.answer(w, r, http.StatusOK, back, msg)
	}
}

// do checks and performs one action.
func (d *Dashboard) do(r *http.Request, a act, s *session, e *AuditEntry) (string, error) {
	switch {
	case d.ReadOnly():
		return "", refuse(http.StatusForbidden, "this dashboard is read-only: no operator credential is configured.")
	case s == nil:
		return "", refuse(http.StatusForbidden, "sign in with the operator credential first.")
	case !tokenOK(r.PostFormValue("csrf"), s.csrf):
		return "", refuse(http.StatusForbidden, "the form does not carry this session's token (a stale page from before sign-in, or a form from elsewhere).")
	case len(e.Note) > MaxNote:
		return "", refuse(http.StatusBadRequest, "the note is %d bytes; at most %d are kept.", len(e.Note), MaxNote)
	}
	ctx, cancel := context.WithTimeout(r.Context(), d.o.RequestTimeout)
	defer cancel()
	switch a {
	case actPause, actResume:
		return d.setPaused(ctx, e.Role, e.Job, a == actPause)
	case actResign:
		return d.resign(ctx, r, e.Role)
	case actHandOver:
		if d.handOver == nil {
			return "", refuse(http.StatusNotImplemented, "handing a role over to a named participant is not available over this lock (it carries no resign requests, or this HostLoom version has no hand-over); resign lets any participant take it.")
		}
		return d.handOverTo(ctx, r, e.Role, e.Target)
	}
	return "", refuse(http.StatusBadRequest, "unknown action.")
}

func (d *Dashboard) setPaused(ctx context.Context, role, job string, paused bool) (string, error) {
	ref := JobRef{Role: role, Job: job}
	if err := d.findJob(ctx, ref); err != nil {
		if errors.Is(err, errUnknownJob) {
			return "", refuse(http.StatusNotFound, "%s (not among the jobs this dashboard lists).", err)
		}
		return "", err
	}
	if d.o.Lock.Features().Jobs == nil {
		return "", refuse(http.StatusNotImplemented, "this lock keeps no job records, so a pause cannot reach the other replicas.")
	}
	var err error
	if s := d.o.Schedulers[role]; s != nil && hasJob(s, job) {
		if paused {
			err = s.Pause(ctx, job)
		} else {
			err = s.Resume(ctx, job)
		}
	} else {
		err = scheduling.SetPaused(ctx, d.o.Lock, role, job, paused)
	}
	if err != nil {
		return "", fmt.Errorf("%s job %q of role %q: %w", map[bool]string{true: "pause", false: "resume"}[paused], job, role, err)
	}
	if paused {
		return fmt.Sprintf("Paused job %s of role %s on every replica: its slots are skipped until it is resumed.", job, role), nil
	}
	return fmt.Sprintf("Resumed job %s of role %s: its next slot runs as usual.", job, role), nil
}

func hasJob(s *scheduling.Scheduler, job string) bool {
	for _, j := range s.Jobs() {
		if j.Name == job {
			return true
		}
	}
	return false
}

// resign asks the role's leader to step down, if the term the page showed
// (its fence and leader) still runs.
func (d *Dashboard) resign(ctx context.Context, r *http.Request, role string) (string, error) {
	ref, local, err := d.findRole(ctx, role)
	if err != nil {
		if errors.Is(err, errUnknownRole) {
			return "", refuse(http.StatusNotFound, "%s (not among the roles this dashboard lists).", err)
		}
		return "", err
	}
	st, err := d.checkTerm(ctx, r, ref)
	if err != nil {
		return "", err
	}
	switch {
	case d.resigner != nil:
		if err := d.resigner.RequestResign(ctx, ref.Key, st.Holder.Owner); err != nil {
			return "", fmt.Errorf("resign role %q: %w", role, err)
		}
		return fmt.Sprintf("Asked %s to step down from role %s (fence %d). Another participant takes the role; the page shows who. The request is not stored: a leader that does not hear it (its link to the lock down, or an older version) keeps the role, and the page then shows it still leading.", st.Holder.Owner, role, st.Fence), nil
	}
	for _, e := range local {
		if e.Identity() == st.Holder.Owner {
			if err := e.Resign(ctx); err != nil {
				return "", fmt.Errorf("resign role %q: %w", role, err)
			}
			return fmt.Sprintf("%s (this process) stepped down from role %s (fence %d).", st.Holder.Owner, role, st.Fence), nil
		}
	}
	return "", refuse(http.StatusNotImplemented, "this lock cannot send resign requests to a leader in another process (%s leads role %q); ask that process, or stop it.", st.Holder.Owner, role)
}

// checkTerm reads the role and checks that the term the form was made for
// (fence and leader) still runs: a stale page must not act on a later
// term.
func (d *Dashboard) checkTerm(ctx context.Context, r *http.Request, ref RoleRef) (locking.KeyState, error) {
	fence, err := strconv.ParseUint(strings.TrimSpace(r.PostFormValue("fence")), 10, 64)
	if err != nil {
		return locking.KeyState{}, refuse(http.StatusBadRequest, "the form carries no valid fence (%q).", r.PostFormValue("fence"))
	}
	leader := r.PostFormValue("leader")
	st, err := d.o.Lock.Inspect(ctx, ref.Key)
	if err != nil && !errors.Is(err, locking.ErrBadRecord) {
		return st, fmt.Errorf("read role %q: %w", ref.Role, err)
	}
	if !st.Held {
		return st, refuse(http.StatusConflict, "the term you saw (fence %d) has ended and nobody leads role %q now.", fence, ref.Role)
	}
	if st.Fence != fence || (leader != "" && st.Holder.Owner != leader) {
		return st, refuse(http.StatusConflict, "the term you saw (fence %d) has ended: %s leads role %q now, with fence %d. Reload and decide again.", fence, st.Holder.Owner, ref.Role, st.Fence)
	}
	return st, nil
}

// handOverTo asks the role's leader to hand the role to target, if the
// term the page showed still runs and target is another participant.
func (d *Dashboard) handOverTo(ctx context.Context, r *http.Request, role, target string) (string, error) {
	ref, _, err := d.findRole(ctx, role)
	if err != nil {
		if errors.Is(err, errUnknownRole) {
			return "", refuse(http.StatusNotFound, "%s (not among the roles this dashboard lists).", err)
		}
		return "", err
	}
	st, err := d.checkTerm(ctx, r, ref)
	if err != nil {
		return "", err
	}
	var others []string
	found := false
	for _, p := range st.Participants {
		if p.Owner == st.Holder.Owner {
			continue
		}
		others = append(others, p.Owner)
		found = found || p.Owner == target
	}
	switch {
	case target == st.Holder.Owner:
		return "", refuse(http.StatusBadRequest, "%s already leads role %q; pick another participant (%s).", target, role, listOrNone(others))
	case !found:
		return "", refuse(http.StatusBadRequest, "%q is not a participant of role %q; its other participants: %s.", target, role, listOrNone(others))
	}
	if err := d.handOver(ctx, ref.Key, st.Holder.Owner, target); err != nil {
		return "", fmt.Errorf("hand over role %q: %w", role, err)
	}
	return fmt.Sprintf("Asked %s to hand role %s over to %s (fence %d). The page shows when %s leads. The request is not stored: a leader that does not hear it (its link to the lock down, or an older version) keeps the role.", st.Holder.Owner, role, target, st.Fence, target), nil
}

// listOrNone joins names, or says there are none.
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
