package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/dashboard"
)

// dashboardCredentialEnv names the variable holding the operators'
// credential, as for the example service. It is read from the environment
// only: a flag's value would show in every user's process list.
const dashboardCredentialEnv = "HOSTLOOM_DASHBOARD_CREDENTIAL"

// listingTTL is how long the dashboard reuses a listing of the roles and
// jobs: listing scans the keyspace, so it is not repeated on every
// refresh of an open page (a role or job that appears shows within it).
const listingTTL = 10 * time.Second

func newDashboard(g *globals, sio stdio) *cobra.Command {
	var listen string
	var refresh time.Duration
	c := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve the operators' web dashboard of the namespace",
		Long: `dashboard serves the operators' web pages (roles, jobs, audit log) of the
namespace the configuration names, as the service's own dashboard shows
them, from outside the service: leaders, fences, lease left and
participants of every role; every job's runs, run under way and paused
state. Open pages update in place.

Running outside the service, it reads the backend only: the transitions
it shows are the changes its own reads observed (their reasons are known
to the replicas), and a job's schedule and policies live in the service's
code, so the jobs page shows what the job store keeps.

It is read-only unless ` + dashboardCredentialEnv + ` holds the operators'
credential; operators then sign in with their name and the credential to
pause and resume jobs and ask leaders to resign, and every action is
recorded (the audit page, and this command's log on stderr).`,
		Example: `  hostloom dashboard -config app.yaml --listen 127.0.0.1:8090
  ` + dashboardCredentialEnv + `=... hostloom dashboard -config app.yaml`,
		Args: cobra.NoArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if refresh < 0 {
				return badUsage("--refresh %v must not be negative", refresh)
			}
			return serveDashboard(cmd.Context(), g, sio, listen, refresh)
		}),
	}
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:8090", "address to serve on; :0 picks a free port")
	c.Flags().DurationVar(&refresh, "refresh", dashboard.DefaultRefresh, "how often an open page reloads its content")
	return c
}

func serveDashboard(ctx context.Context, g *globals, sio stdio, listen string, refresh time.Duration) error {
	return withEnv(ctx, g, sio, func(e *env) error {
		enc := zap.NewProductionEncoderConfig()
		enc.EncodeTime = zapcore.ISO8601TimeEncoder
		log := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(sio.err), zap.InfoLevel))
		roles := &cached[dashboard.RoleRef]{read: func(ctx context.Context) ([]dashboard.RoleRef, error) {
			rks, err := e.list(ctx, nil)
			out := make([]dashboard.RoleRef, len(rks))
			for i, rk := range rks {
				out[i] = dashboard.RoleRef{Role: rk.role, Key: rk.key}
			}
			return out, err
		}}
		jobs := &cached[dashboard.JobRef]{read: func(ctx context.Context) ([]dashboard.JobRef, error) {
			refs, err := e.jobRefs(ctx, "")
			out := make([]dashboard.JobRef, len(refs))
			for i, r := range refs {
				out[i] = dashboard.JobRef{Role: r.role, Job: r.job}
			}
			return out, err
		}}
		d, err := dashboard.New(dashboard.Options{
			Lock: e.lock, Standalone: true, ListRoles: roles.get, ListJobs: jobs.get,
			Credential: getenv(sio.environ, dashboardCredentialEnv),
			Title:      fmt.Sprintf("HostLoom · %s", e.namespace()),
			Refresh:    refresh, RequestTimeout: e.timeout, Logger: log,
		})
		if err != nil {
			return err
		}
		defer d.Close()
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			return fmt.Errorf("--listen %s: %w", listen, err)
		}
		mode := "read-only (" + dashboardCredentialEnv + " not set)"
		if !d.ReadOnly() {
			mode = "operators sign in to act"
		}
		fmt.Fprintf(sio.out, "Serving the dashboard of namespace %q at http://%s/ (%s). Ctrl-C stops.\n", e.namespace(), ln.Addr(), mode)
		var busy atomic.Int64
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			busy.Add(1)
			defer busy.Add(-1)
			d.ServeHTTP(w, r)
		})}
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
		}
		err = stopServer(srv, &busy, e.timeout+time.Second)
		if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	})
}

// stopServer stops srv: it takes no new connection, lets the requests
// under way (busy counts them) finish for up to grace, then closes every
// connection left. Those are mostly connections a browser or an HTTP
// client opened ahead of use and never sent a request on; http.Server's
// own Shutdown waits up to five seconds for such a connection, so a
// stopped dashboard would hang on an open browser tab and then fail.
// It reports requests that were still running when cut.
func stopServer(srv *http.Server, busy *atomic.Int64, grace time.Duration) error {
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(context.Background()) }() // closes the listener and idle connections
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(grace); busy.Load() > 0 && time.Now().Before(end); {
		<-tick.C
	}
	cut := busy.Load()
	err := srv.Close()
	if serr := <-shut; serr != nil {
		err = errors.Join(err, serr)
	}
	if cut > 0 {
		err = errors.Join(err, fmt.Errorf("stopping the dashboard: %d request(s) still running after %s were cut", cut, grace))
	}
	return err
}

// cached reuses a listing for listingTTL.
type cached[T any] struct {
	read func(ctx context.Context) ([]T, error)

	mu   sync.Mutex
	at   time.Time
	last []T
}

func (c *cached[T]) get(ctx context.Context) ([]T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < listingTTL {
		return c.last, nil
	}
	out, err := c.read(ctx)
	if err != nil {
		return out, err
	}
	c.last, c.at = out, time.Now()
	return out, nil
}
