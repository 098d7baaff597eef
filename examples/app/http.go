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
	"github.com/hostloom/hostloom/leadershipfx"
)

// listenAddr is the HTTP listen address (-http).
type listenAddr string

type httpParams struct {
	fx.In

	Lifecycle fx.Lifecycle
	Addr      listenAddr
	Health    *leadershipfx.Health
	Metrics   http.Handler `name:"metrics"`
	Log       *zap.Logger
}

// httpServer serves /healthz, /readyz, /leadership and /metrics.
type httpServer struct {
	srv    *http.Server
	health *leadershipfx.Health
	done   chan struct{}
}

func newHTTPServer(p httpParams) *httpServer {
	h := &httpServer{health: p.Health, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", p.Health.Livez())
	mux.Handle("GET /readyz", p.Health.Readyz())
	mux.HandleFunc("GET /leadership", h.leadership)
	mux.Handle("GET /metrics", p.Metrics)
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
	Role        string  `json:"role"`
	IsLeader    bool    `json:"is_leader"`
	Term        uint64  `json:"term"`
	Coordinated bool    `json:"coordinated"`
	Identity    string  `json:"identity"`
	LockKey     string  `json:"lock_key"`
	ProviderKey string  `json:"provider_key"`
	Holder      *holder `json:"holder"`
	HolderError string  `json:"holder_error,omitempty"`
}

// holder is who holds the role's lease, as the backend sees it.
type holder struct {
	Identity    string `json:"identity"`
	RemainingMS int64  `json:"remaining_ms"`
}

// leadership serves the state of every role: this instance's view and the
// backend's holder (one lookup per role, bounded by one second).
func (h *httpServer) leadership(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	var out []roleStatus
	for _, e := range h.health.Electors() {
		d := leadership.Describe(e)
		st := roleStatus{
			Role: e.Role(), IsLeader: e.IsLeader(), Term: e.Term(), Coordinated: e.IsCoordinated(),
			Identity: d.Identity, LockKey: d.LockKey, ProviderKey: d.ProviderKey,
		}
		hd, ok, err := e.LookupLeader(ctx)
		switch {
		case err != nil:
			st.HolderError = err.Error()
		case ok:
			st.Holder = &holder{Identity: hd.Owner, RemainingMS: hd.TTL.Milliseconds()}
		}
		out = append(out, st)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}
