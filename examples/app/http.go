package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/dashboard"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/schedulingfx"
)

// listenAddr is the HTTP listen address (-http).
type listenAddr string

type httpParams struct {
	fx.In

	Lifecycle fx.Lifecycle
	Addr      listenAddr
	Health    *leadershipfx.Health
	// Schedulers are schedulingfx.Module's: one per role with jobs.
	Schedulers *schedulingfx.Schedulers
	Metrics    http.Handler `name:"metrics"`
	// Dashboard is dashboardfx.Module's operators' view, at /dashboard/.
	Dashboard *dashboard.Dashboard
	Log       *zap.Logger
}

// httpServer serves /healthz, /readyz, /leadership, /jobs, /metrics and
// the dashboard at /dashboard/.
type httpServer struct {
	srv        *http.Server
	health     *leadershipfx.Health
	schedulers *schedulingfx.Schedulers
	done       chan struct{}
}

// lookupBudget bounds the backend round trips of one /leadership or /jobs
// request, all roles and jobs together.
const lookupBudget = time.Second

// historyLen is how many of a job's newest runs /jobs shows.
const historyLen = 5

func newHTTPServer(p httpParams) *httpServer {
	h := &httpServer{health: p.Health, schedulers: p.Schedulers, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", p.Health.Livez())
	mux.Handle("GET /readyz", p.Health.Readyz())
	mux.HandleFunc("GET /leadership", h.leadership)
	mux.HandleFunc("GET /jobs", h.jobs)
	mux.Handle("GET /metrics", p.Metrics)
	mux.Handle("/dashboard/", http.StripPrefix("/dashboard", p.Dashboard))
	h.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	p.Lifecycle.Append(fx.Hook{
		// Listening in OnStart makes a busy port fail the start.
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", string(p.Addr))
			if err != nil {
				return err
			}
			p.Log.Info("HTTPListening", zap.String("addr", ln.Addr().String()))
			go func() {
				defer close(h.done)
				if err := h.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					p.Log.Error("HTTPServeFailed", zap.Error(err))
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			err := h.srv.Shutdown(ctx)
			select {
			case <-h.done:
			case <-ctx.Done():
			}
			return err
		},
	})
	return h
}

// roleStatus is one entry of /leadership.
type roleStatus struct {
	Role string `json:"role"`
	// Identity is this instance's identity in the role.
	Identity string `json:"identity"`
	// IsLeader, Term and Fence are this instance's: Fence is the current
	// term's fencing token, 0 when not leading (G2).
	IsLeader bool   `json:"is_leader"`
	Term     uint64 `json:"term"`
	Fence    uint64 `json:"fence"`
	// Leader is the leader's identity as this instance learned it without
	// I/O (P2); "" when it knows of no running lease.
	Leader       string `json:"leader"`
	SafetyMargin string `json:"safety_margin"`
	Coordinated  bool   `json:"coordinated"`
	LockKey      string `json:"lock_key"`
	ProviderKey  string `json:"provider_key"`
	// Holder is who holds the lease as the backend sees it (one lookup).
	Holder      *holder `json:"holder"`
	HolderError string  `json:"holder_error,omitempty"`
	// Participants are the role's live electors, from the backend (P1);
	// null with ParticipantsError when the lookup failed.
	Participants      []participant `json:"participants"`
	ParticipantsError string        `json:"participants_error,omitempty"`
}

// holder is who holds the role's lease, as the backend sees it.
type holder struct {
	Identity    string `json:"identity"`
	RemainingMS int64  `json:"remaining_ms"`
}

// participant is one live elector of a role.
type participant struct {
	Identity string    `json:"identity"`
	Leader   bool      `json:"leader"`
	Since    time.Time `json:"since"`
}

// leadership serves the state of every role: this instance's view, what
// it learned of the leader, and from the backend the holder and the
// participants (two round trips per role, all bounded by lookupBudget and
// the request). A failed lookup is reported in its role's entry; the page
// still answers 200.
func (h *httpServer) leadership(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), lookupBudget)
	defer cancel()
	out := []roleStatus{}
	for _, e := range h.health.Electors() {
		d := leadership.Describe(e)
		st := roleStatus{
			Role: d.Role, Identity: d.Identity, IsLeader: d.IsLeader, Term: d.Term, Fence: d.Fence,
			Leader: d.Leader, SafetyMargin: d.SafetyMargin.String(), Coordinated: d.Coordinated,
			LockKey: d.LockKey, ProviderKey: d.ProviderKey,
		}
		hd, ok, err := e.LookupLeader(ctx)
		switch {
		case err != nil:
			st.HolderError = err.Error()
		case ok:
			st.Holder = &holder{Identity: hd.Owner, RemainingMS: hd.TTL.Milliseconds()}
		}
		ps, err := e.Participants(ctx)
		if err != nil {
			st.ParticipantsError = err.Error()
		} else {
			st.Participants = make([]participant, 0, len(ps))
			for _, p := range ps {
				st.Participants = append(st.Participants, participant{Identity: p.Identity, Leader: p.Leader, Since: p.Since})
			}
		}
		out = append(out, st)
	}
	writeJSON(w, out)
}

// jobStatus is one entry of /jobs: a job as its role's scheduler on this
// instance sees it, and its newest runs on every replica.
type jobStatus struct {
	Role     string `json:"role"`
	Name     string `json:"name"`
	Schedule string `json:"schedule"`
	// Next is the next slot the scheduler acts on.
	Next time.Time `json:"next,omitzero"`
	// Running reports a run going on this instance now.
	Running bool `json:"running"`
	// Paused is the paused state as this instance last saw it (a
	// follower's may be stale until it next claims a slot).
	Paused bool `json:"paused"`
	// LastSlot and LastRun are the slot and start of the latest run
	// started here; LastOutcome and LastError describe the latest run
	// that finished here. Absent before the first.
	LastSlot    time.Time `json:"last_slot,omitzero"`
	LastRun     time.Time `json:"last_run,omitzero"`
	LastOutcome string    `json:"last_outcome,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	LastSuccess time.Time `json:"last_success,omitzero"`
	// History holds the newest runs of every replica, newest first, from
	// the slot store; absent, with HistoryNote, when the scheduler has no
	// store that keeps job records, or with HistoryError when the lookup
	// failed.
	History      []runRecord `json:"history,omitzero"`
	HistoryNote  string      `json:"history_note,omitempty"`
	HistoryError string      `json:"history_error,omitempty"`
}

// runRecord is one run of a job's history.
type runRecord struct {
	Slot     time.Time `json:"slot"`
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended,omitzero"`
	Identity string    `json:"identity"`
	Fence    uint64    `json:"fence,omitempty"`
	// Outcome is "unknown" while the run goes or when it never reported
	// its end.
	Outcome string `json:"outcome"`
	Attempt int    `json:"attempt"`
}

// jobs serves every job of every role: the scheduler's state (no I/O) and
// the historyLen newest runs (one round trip per job, all bounded by
// lookupBudget and the request). A failed lookup is reported in its job's
// entry; the page still answers 200.
func (h *httpServer) jobs(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), lookupBudget)
	defer cancel()
	out := []jobStatus{}
	for _, role := range h.schedulers.Roles() {
		s := h.schedulers.For(role)
		for _, j := range s.Jobs() {
			st := jobStatus{
				Role: role, Name: j.Name, Schedule: j.Schedule, Next: j.Next, Running: j.Running, Paused: j.Paused,
				LastSlot: j.LastSlot, LastRun: j.LastRun, LastSuccess: j.LastSuccess,
			}
			if j.LastOutcome != 0 {
				st.LastOutcome = j.LastOutcome.String()
			}
			if j.LastError != nil {
				st.LastError = j.LastError.Error()
			}
			runs, err := s.History(ctx, j.Name, historyLen)
			switch {
			case errors.Is(err, scheduling.ErrNoJobStore):
				st.HistoryNote = "no history: the scheduler has no slot store that keeps job records (scheduling.slot_store and a lock that coordinates)"
			case err != nil:
				st.HistoryError = err.Error()
			default:
				st.History = make([]runRecord, 0, len(runs))
				for _, rr := range runs {
					st.History = append(st.History, runRecord{
						Slot: rr.Slot, Started: rr.Started, Ended: rr.Ended, Identity: rr.Identity,
						Fence: rr.Fence, Outcome: rr.Outcome.String(), Attempt: rr.Attempt,
					})
				}
			}
			out = append(out, st)
		}
	}
	writeJSON(w, out)
}

// writeJSON writes v as indented JSON, never cached.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
