package dashboard

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/scheduling"
)

//go:embed assets
var assets embed.FS

// Defaults of Options.
const (
	// DefaultRefresh is how often an open page reloads its content.
	DefaultRefresh = 2 * time.Second
	// DefaultRequestTimeout bounds the backend reads of one page load.
	DefaultRequestTimeout = 2 * time.Second
	// DefaultHistory is how many recent runs a job shows.
	DefaultHistory = 10
	// MaxNote is the longest note an action takes, in bytes.
	MaxNote = 500
	// MaxOperatorName is the longest operator name a sign-in takes, in bytes.
	MaxOperatorName = 64
	// AuditLen is how many actions the audit log keeps in memory.
	AuditLen = 200
	// TransitionsLen is how many transitions a role keeps in memory.
	TransitionsLen = 20
	// LeaderlessWindow is the window "leaderless lately" sums over.
	LeaderlessWindow = 15 * time.Minute
	// SessionLifetime is how long a sign-in lasts.
	SessionLifetime = 12 * time.Hour
	// maxSessions bounds the sessions kept; the oldest go first.
	maxSessions = 1000
)

// RoleRef names a role and its lock key (the consumer key, before
// namespacing, as leadership.Describe reports it).
type RoleRef struct {
	Role string
	Key  string
}

// JobRef names a job of a role.
type JobRef struct {
	Role string
	Job  string
}

// Options configure a Dashboard. Lock is required; everything else has a
// default.
type Options struct {
	// Lock is the lock the service elects over: the dashboard reads every
	// role's holder, fence and participants (Inspect) and every job's
	// records from it, and sends resign requests and pauses through it.
	// Required.
	Lock *locking.DistributedLock

	// Electors are this process's electors (leadershipfx.Health.Electors
	// in an fx app). Their roles are listed, and their transitions (with
	// reasons) and settings are shown. Default none.
	Electors []*leadership.Elector

	// Schedulers are this process's schedulers by role
	// (schedulingfx.Schedulers in an fx app). Their jobs are listed with
	// schedule, zone, policies and next slots. Default none.
	Schedulers map[string]*scheduling.Scheduler

	// ListRoles, when set, lists further roles (the standalone hostloom
	// dashboard lists the lock's keys). Default: the Electors' roles only.
	ListRoles func(ctx context.Context) ([]RoleRef, error)

	// ListJobs, when set, lists further jobs (the standalone hostloom
	// dashboard scans the job store). Default: the Schedulers' jobs only.
	ListJobs func(ctx context.Context) ([]JobRef, error)

	// Credential is the operators' shared secret. Empty (the default)
	// makes the dashboard read-only: no action is offered or accepted.
	// It is compared in constant time and never shown or logged.
	Credential string

	// Standalone tells the pages that the dashboard runs outside the
	// service (the hostloom CLI), so they say what it cannot know.
	Standalone bool

	// Title heads every page. Default "HostLoom".
	Title string

	// Refresh is how often an open page reloads its content. Default
	// DefaultRefresh; it must not be negative.
	Refresh time.Duration

	// RequestTimeout bounds the backend reads of one page load. Default
	// DefaultRequestTimeout; it must not be negative.
	RequestTimeout time.Duration

	// History is how many recent runs each job shows, 1..100. Default
	// DefaultHistory.
	History int

	// Logger receives the audit log (DashboardAction at Info) and errors.
	// Default zap.NewNop().
	Logger *zap.Logger

	// Now is the clock; default time.Now. For tests.
	Now func() time.Time
}

// ErrInvalidOptions is matched by New's error for invalid Options.
var ErrInvalidOptions = errors.New("dashboard: invalid options")

// Dashboard is an http.Handler serving the operators' pages. Mount it
// under a path ending in a slash with http.StripPrefix, or at the root.
// Close it when done: it subscribes to its electors' transitions.
type Dashboard struct {
	o        Options
	credHash [32]byte
	mux      *http.ServeMux
	pages    *template.Template
	css      []byte
	log      *zap.Logger
	now      func() time.Time

	// handOver asks a role's holder, through the lock, to hand the role
	// to a named participant; nil when the lock cannot (found once, in
	// New).
	handOver func(ctx context.Context, key, owner, target string) error
	// resigner asks a role's holder, through the lock, to step down; nil
	// when the lock cannot send resign requests (its Features).
	resigner locking.ResignRequester

	readMu   sync.Mutex // serializes backend reads (see data)
	mu       sync.Mutex
	sessions map[string]*session
	audit    []AuditEntry // newest last
	pauses   map[JobRef]AuditEntry
	roles    map[string]*tracker
	unsub    []func()
	reads    map[string]shared // the latest read of each page's content
}

// shared is a page's content as read at a time: every page open within
// half a refresh interval of a read shows it, so more open pages do not
// read the backend more often.
type shared struct {
	at      time.Time
	content any
}

// New returns a Dashboard. It fails for a nil Lock and for a negative
// Refresh or RequestTimeout or a History out of range, naming the field
// and value (errors.Is ErrInvalidOptions).
func New(o Options) (*Dashboard, error) {
	var errs []error
	if o.Lock == nil {
		errs = append(errs, errors.New("the Lock is nil"))
	}
	if o.Refresh < 0 {
		errs = append(errs, fmt.Errorf("the Refresh %v must not be negative", o.Refresh))
	}
	if o.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("the RequestTimeout %v must not be negative", o.RequestTimeout))
	}
	if o.History < 0 || o.History > 100 {
		errs = append(errs, fmt.Errorf("the History %d must be in 1..100 (0 means %d)", o.History, DefaultHistory))
	}
	for i, e := range o.Electors {
		if e == nil {
			errs = append(errs, fmt.Errorf("the Electors[%d] is nil", i))
		}
	}
	for role, s := range o.Schedulers {
		if s == nil {
			errs = append(errs, fmt.Errorf("the Schedulers[%q] is nil", role))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	o.Refresh = cmp.Or(o.Refresh, DefaultRefresh)
	o.RequestTimeout = cmp.Or(o.RequestTimeout, DefaultRequestTimeout)
	o.History = cmp.Or(o.History, DefaultHistory)
	o.Title = cmp.Or(o.Title, "HostLoom")
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: templates: %w", err)
	}
	css, err := assets.ReadFile("assets/style.css")
	if err != nil {
		return nil, fmt.Errorf("dashboard: style: %w", err)
	}
	d := &Dashboard{
		o: o, pages: pages, css: css, log: o.Logger, now: o.Now,
		sessions: map[string]*session{},
		pauses:   map[JobRef]AuditEntry{},
		roles:    map[string]*tracker{},
		reads:    map[string]shared{},
	}
	if o.Credential != "" {
		d.credHash = sha256.Sum256([]byte(o.Credential))
	}
	// Handing over travels as a resign request naming the successor; a
	// lock of a HostLoom version without RequestHandOver, or without
	// resign requests, cannot carry it.
	d.resigner = o.Lock.Features().Resign
	if h, ok := d.resigner.(handOverRequester); ok {
		d.handOver = h.RequestHandOver
	}
	for _, e := range o.Electors {
		d.watch(e)
	}
	d.routes()
	return d, nil
}

// handOverRequester is the lock's request to hand a role over to a named
// participant.
type handOverRequester interface {
	RequestHandOver(ctx context.Context, key, owner, target string) error
}

// Close unsubscribes from the electors' transitions. The handler keeps
// serving, without new local transitions.
func (d *Dashboard) Close() error {
	d.mu.Lock()
	unsub := d.unsub
	d.unsub = nil
	d.mu.Unlock()
	for _, u := range unsub {
		u()
	}
	return nil
}

// ReadOnly reports whether no operator credential is configured.
func (d *Dashboard) ReadOnly() bool { return d.o.Credential == "" }

func (d *Dashboard) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		redirect(w, r, "roles")
	})
	m.HandleFunc("GET /roles", d.page("roles"))
	m.HandleFunc("GET /jobs", d.page("jobs"))
	m.HandleFunc("GET /audit", d.page("audit"))
	m.HandleFunc("GET /fragment/roles", d.fragment("roles"))
	m.HandleFunc("GET /fragment/jobs", d.fragment("jobs"))
	m.HandleFunc("GET /fragment/audit", d.fragment("audit"))
	m.HandleFunc("GET /style.css", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "max-age=300")
		_, _ = w.Write(d.css)
	})
	m.HandleFunc("GET /login", d.loginPage)
	m.HandleFunc("POST /login", d.guard(d.login))
	m.HandleFunc("POST /logout", d.guard(d.logout))
	m.HandleFunc("POST /action/pause", d.guard(d.action(actPause)))
	m.HandleFunc("POST /action/resume", d.guard(d.action(actResume)))
	m.HandleFunc("POST /action/resign", d.guard(d.action(actResign)))
	m.HandleFunc("POST /action/handover", d.guard(d.action(actHandOver)))
	d.mux = m
}

// ServeHTTP implements http.Handler.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	d.mux.ServeHTTP(w, r)
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// pageData is what every page template gets.
type pageData struct {
	Title      string
	Page       string
	Nonce      string
	Refresh    int64 // milliseconds
	Standalone bool
	ReadOnly   bool
	Operator   string // signed-in operator; "" when not signed in
	CSRF       string
	Now        time.Time
	Base       string // the dashboard's root path, for <base href>
	Content    any
	Message    string
	Error      bool
}

// page serves a whole page: the layout around the named content.
func (d *Dashboard) page(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d.render(w, r, http.StatusOK, "layout", d.data(r, name))
	}
}

// fragment serves the named content alone, for the live refresh.
func (d *Dashboard) fragment(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d.render(w, r, http.StatusOK, name, d.data(r, name))
	}
}

// data gathers the content of the named page.
func (d *Dashboard) data(r *http.Request, name string) pageData {
	pd := d.base(r, name)
	if name == "audit" {
		pd.Content = d.Audit()
		return pd
	}
	d.readMu.Lock() // one read at a time per dashboard; the others wait for it
	defer d.readMu.Unlock()
	d.mu.Lock()
	last, ok := d.reads[name]
	d.mu.Unlock()
	if ok && d.now().Sub(last.at) < d.o.Refresh/2 {
		pd.Content = last.content
		return pd
	}
	ctx, cancel := context.WithTimeout(r.Context(), d.o.RequestTimeout)
	defer cancel()
	at := d.now()
	switch name {
	case "roles":
		pd.Content = d.readRoles(ctx)
	case "jobs":
		pd.Content = d.readJobs(ctx)
	}
	d.mu.Lock()
	d.reads[name] = shared{at: at, content: pd.Content}
	d.mu.Unlock()
	return pd
}

// forget drops the shared reads, so the page after an action shows its
// effect.
func (d *Dashboard) forget() {
	d.mu.Lock()
	clear(d.reads)
	d.mu.Unlock()
}

// base is the part of pageData every page shares.
func (d *Dashboard) base(r *http.Request, name string) pageData {
	pd := pageData{
		Title: d.o.Title, Page: name, Nonce: randomHex(16), Refresh: d.o.Refresh.Milliseconds(),
		Standalone: d.o.Standalone, ReadOnly: d.ReadOnly(), Now: d.now(), Base: root(r),
	}
	if s := d.session(r); s != nil {
		pd.Operator, pd.CSRF = s.name, s.csrf
	}
	return pd
}

// render executes a template; a failure is logged (the status is sent).
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, pd pageData) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'self'; script-src 'nonce-"+pd.Nonce+"'")
	w.WriteHeader(status)
	if err := d.pages.ExecuteTemplate(w, name, pd); err != nil && r.Context().Err() == nil {
		d.log.Error("DashboardRenderFailed", zap.String("template", name), zap.Error(err))
	}
}

// answer renders the outcome of a post: a page with the message and a way
// back.
func (d *Dashboard) answer(w http.ResponseWriter, r *http.Request, status int, back, msg string) {
	pd := d.base(r, "answer")
	pd.Message, pd.Error = msg, status >= 400
	pd.Content = back
	d.render(w, r, status, "layout", pd)
}

var funcs = template.FuncMap{
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return showDuration(now.Sub(t)) + " ago"
	},
	"in": func(now, t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		if !t.After(now) {
			return "due"
		}
		return "in " + showDuration(t.Sub(now))
	},
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000Z")
	},
	"dur":  showDuration,
	"join": strings.Join,
}

// showDuration rounds d for people: milliseconds below 10s, then
// seconds.
func showDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + showDuration(-d)
	case d < 10*time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// sortedKeys returns m's keys sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
