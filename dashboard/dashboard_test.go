package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/dashboard"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const secret = "s3cret-operator-token"

// fixture is a dashboard over memlock with role billing led by "alpha"
// (a second participant "beta" follows) and a job invoices on billing.
type fixture struct {
	t     *testing.T
	lock  *locking.DistributedLock
	alpha *leadership.Elector
	beta  *leadership.Elector
	sched *scheduling.Scheduler
	dash  *dashboard.Dashboard
	srv   *httptest.Server
	logs  *observer.ObservedLogs
}

func newFixture(t *testing.T, credential string) *fixture {
	t.Helper()
	lock, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	opts := leadership.DefaultOptions()
	// A resigning leader sits out one RetryInterval, the window in which
	// the other candidate must take the role (ResignHandsTheRoleOn); a
	// second leaves room for a CPU-starved CI machine.
	opts.Lease, opts.RenewInterval, opts.RetryInterval = 2*time.Second, 500*time.Millisecond, time.Second
	ctx := context.Background()
	f := &fixture{t: t, lock: lock}
	// What the electors log (Debug and up) is printed when a test fails:
	// a failure of the election's timing is read there.
	elected, electedLogs := observer.New(zap.DebugLevel)
	electorLog := zap.New(elected)
	f.alpha, err = leadership.NewElector("billing", lock, opts, leadership.WithIdentity("alpha"), leadership.WithLogger(electorLog.With(zap.String("elector", "alpha"))))
	if err != nil {
		t.Fatal(err)
	}
	f.beta, err = leadership.NewElector("billing", lock, opts, leadership.WithIdentity("beta"), leadership.WithLogger(electorLog.With(zap.String("elector", "beta"))))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.alpha.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.alpha.WaitForLeadership(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.beta.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Start returns before beta's first attempt has registered it as a
	// participant; the pages read the registry, so wait for both.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		ps, err := f.alpha.Participants(ctx)
		if err == nil && len(ps) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("beta did not register as a participant within 30s: %v, %v", ps, err)
		}
	}
	// A resign request reaches a leader over its subscription to the
	// lock's events, which comes up a moment after Start (alpha may lead
	// before it is live): a request sent before is not heard
	// (ResignHandsTheRoleOn), so wait for both subscriptions.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		a, b := leadership.Describe(f.alpha).Subscribed, leadership.Describe(f.beta).Subscribed
		if a && b {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the electors' subscriptions were not live within 30s: alpha %v, beta %v", a, b)
		}
	}
	f.sched, err = scheduling.New(f.alpha, scheduling.WithSlotStore(lock))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.sched.Add(scheduling.Job{Name: "invoices", Schedule: scheduling.Every(time.Hour), Timeout: time.Minute,
		Run: func(context.Context) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	if err := f.sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	f.logs = logs
	f.dash, err = dashboard.New(dashboard.Options{
		Lock: lock, Electors: []*leadership.Elector{f.alpha, f.beta},
		Schedulers: map[string]*scheduling.Scheduler{"billing": f.sched},
		Credential: credential, Logger: zap.New(core),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.serve()
	t.Cleanup(func() {
		_ = f.dash.Close()
		_ = f.sched.Stop(ctx)
		_ = f.beta.Stop(ctx)
		_ = f.alpha.Stop(ctx)
		_ = lock.Close()
	})
	t.Cleanup(func() { // runs first: the electors still run
		if !t.Failed() {
			return
		}
		for _, e := range electedLogs.All() {
			t.Logf("%s %s %s %v", e.Time.Format("15:04:05.000000"), e.Level, e.Message, e.ContextMap())
		}
	})
	return f
}

// serve mounts the dashboard at /ops/ on a test server.
func (f *fixture) serve() {
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", f.dash))
	f.srv = httptest.NewServer(mux)
	f.t.Cleanup(f.srv.Close)
}

// client returns a client with its own cookie jar that does not follow
// redirects.
func (f *fixture) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (f *fixture) get(c *http.Client, path string) (int, string) {
	f.t.Helper()
	resp, err := c.Get(f.srv.URL + "/ops/" + path)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (f *fixture) post(c *http.Client, path string, form url.Values, header http.Header) (int, string) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/ops/"+path, strings.NewReader(form.Encode()))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// signIn signs c in as name and returns the session's form token.
func (f *fixture) signIn(c *http.Client, name string) string {
	f.t.Helper()
	form := url.Values{"operator": {name}, "credential": {secret}}
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/ops/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	// The redirect and the cookie name the path the dashboard is mounted at.
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ops/roles" {
		f.t.Fatalf("sign-in: status %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if ck := resp.Cookies(); len(ck) != 1 || ck[0].Path != "/ops/" || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
		f.t.Fatalf("sign-in cookie %+v", ck)
	}
	_, page := f.get(c, "jobs")
	const marker = `name="csrf" value="`
	i := strings.Index(page, marker)
	if i < 0 {
		f.t.Fatalf("no form token on the jobs page after sign-in:\n%s", page)
	}
	rest := page[i+len(marker):]
	return rest[:strings.IndexByte(rest, '"')]
}

func (f *fixture) paused() bool {
	f.t.Helper()
	st, err := f.lock.JobStatus(context.Background(), scheduling.JobKey("billing", "invoices"))
	if err != nil {
		f.t.Fatal(err)
	}
	return st.Paused
}

func TestDashboard_W1_RolesPageShowsLeaderFenceParticipants(t *testing.T) {
	f := newFixture(t, "")
	status, body := f.get(f.client(), "roles")
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	fence := strconv.FormatUint(f.alpha.Fence(), 10)
	for _, want := range []string{`data-leader="alpha"`, `<td class="fence">` + fence + `</td>`, "<td>alpha</td><td>yes</td>", "<td>beta</td><td></td>", "leads since before the dashboard started", "read-only"} {
		if !strings.Contains(body, want) {
			t.Errorf("roles page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "action/resign") {
		t.Error("a read-only dashboard offers resign")
	}
	// The fragment is what the page's script polls: the same content.
	_, frag := f.get(f.client(), "fragment/roles")
	if !strings.Contains(frag, `data-leader="alpha"`) || strings.Contains(frag, "<html") {
		t.Errorf("fragment:\n%s", frag)
	}
}

func TestDashboard_W1_JobsPageShowsScheduleAndPolicies(t *testing.T) {
	f := newFixture(t, "")
	_, body := f.get(f.client(), "jobs")
	for _, want := range []string{"invoices", "every 1h0m0s", "overlap skip", "catch-up latest", "recover off", "timeout 1m0s", "Next runs"} {
		if !strings.Contains(body, want) {
			t.Errorf("jobs page lacks %q:\n%s", want, body)
		}
	}
}

func TestDashboard_W2_ReadOnlyRefusesActions(t *testing.T) {
	f := newFixture(t, "")
	c := f.client()
	status, body := f.post(c, "action/pause", url.Values{"role": {"billing"}, "job": {"invoices"}}, nil)
	if status != http.StatusForbidden || !strings.Contains(body, "read-only") {
		t.Fatalf("status %d: %s", status, body)
	}
	status, _ = f.post(c, "login", url.Values{"operator": {"mallory"}, "credential": {""}}, nil)
	if status != http.StatusForbidden {
		t.Fatalf("sign-in on a read-only dashboard: status %d", status)
	}
	if f.paused() {
		t.Fatal("the job was paused")
	}
}

func TestDashboard_W2_PauseAndResumeWithNoteAreRecorded(t *testing.T) {
	f := newFixture(t, secret)
	c := f.client()
	csrf := f.signIn(c, "alice")
	status, body := f.post(c, "action/pause", url.Values{"csrf": {csrf}, "role": {"billing"}, "job": {"invoices"}, "note": {"vendor outage"}}, nil)
	// The answer lives one level down: its links resolve from the root.
	if status != http.StatusOK || !strings.Contains(body, "Paused job invoices") || !strings.Contains(body, `<base href="/ops/">`) {
		t.Fatalf("pause: status %d: %s", status, body)
	}
	if !f.paused() {
		t.Fatal("the store does not show the job paused")
	}
	_, page := f.get(c, "jobs")
	if !strings.Contains(page, "by alice at 20") || !strings.Contains(page, "vendor outage") {
		t.Errorf("jobs page does not say who paused and why:\n%s", page)
	}
	_, audit := f.get(c, "audit")
	if !strings.Contains(audit, "alice") || !strings.Contains(audit, "pause") || !strings.Contains(audit, "vendor outage") {
		t.Errorf("audit page:\n%s", audit)
	}
	if n := f.logs.FilterMessage("DashboardAction").FilterField(zap.String("action", "pause")).FilterField(zap.String("who", "alice")).Len(); n != 1 {
		t.Errorf("DashboardAction pause by alice logged %d times", n)
	}
	status, body = f.post(c, "action/resume", url.Values{"csrf": {csrf}, "role": {"billing"}, "job": {"invoices"}}, nil)
	if status != http.StatusOK || f.paused() {
		t.Fatalf("resume: status %d, paused %v: %s", status, f.paused(), body)
	}
	// The credential never appears on a page or in the log.
	for _, p := range []string{"roles", "jobs", "audit", "login"} {
		if _, b := f.get(c, p); strings.Contains(b, secret) {
			t.Errorf("page %s shows the credential", p)
		}
	}
	for _, e := range f.logs.All() {
		for _, v := range e.ContextMap() {
			if s, ok := v.(string); ok && strings.Contains(s, secret) {
				t.Errorf("log %s shows the credential", e.Message)
			}
		}
	}
}

func TestDashboard_W2_ForgeryIsRefused(t *testing.T) {
	f := newFixture(t, secret)
	c := f.client()
	csrf := f.signIn(c, "alice")
	form := url.Values{"csrf": {csrf}, "role": {"billing"}, "job": {"invoices"}}
	for name, h := range map[string]http.Header{
		"cross-site fetch":  {"Sec-Fetch-Site": {"cross-site"}},
		"same-site fetch":   {"Sec-Fetch-Site": {"same-site"}},
		"foreign origin":    {"Origin": {"https://evil.example"}},
		"opaque origin":     {"Origin": {"null"}},
		"foreign and fetch": {"Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"cross-site"}},
	} {
		status, body := f.post(c, "action/pause", form, h)
		if status != http.StatusForbidden || !strings.Contains(body, "another site") {
			t.Errorf("%s: status %d: %s", name, status, body)
		}
	}
	// A session's cookie without its form token (or with another's).
	for _, tok := range []string{"", "0123", strings.Repeat("a", len(csrf))} {
		form.Set("csrf", tok)
		if status, body := f.post(c, "action/pause", form, nil); status != http.StatusForbidden || !strings.Contains(body, "token") {
			t.Errorf("token %q: status %d: %s", tok, status, body)
		}
	}
	// No session at all.
	form.Set("csrf", csrf)
	if status, body := f.post(f.client(), "action/pause", form, nil); status != http.StatusForbidden || !strings.Contains(body, "sign in") {
		t.Errorf("no session: status %d: %s", status, body)
	}
	// A wrong credential.
	if status, _ := f.post(f.client(), "login", url.Values{"operator": {"mallory"}, "credential": {"guess"}}, nil); status != http.StatusForbidden {
		t.Errorf("wrong credential: status %d", status)
	}
	if f.paused() {
		t.Fatal("a refused post paused the job")
	}
	if n := f.logs.FilterMessage("DashboardAction").FilterField(zap.String("outcome", "refused")).Len(); n < 10 {
		t.Errorf("%d refusals recorded, want every one", n)
	}
}

func TestDashboard_W2_BadInputChangesNothing(t *testing.T) {
	f := newFixture(t, secret)
	c := f.client()
	csrf := f.signIn(c, "alice")
	fence := strconv.FormatUint(f.alpha.Fence(), 10)
	for _, tc := range []struct {
		name   string
		path   string
		form   url.Values
		status int
		says   string
	}{
		{"unknown job", "action/pause", url.Values{"role": {"billing"}, "job": {"nope"}}, http.StatusNotFound, `unknown job &#34;nope&#34;`},
		{"unknown role of job", "action/pause", url.Values{"role": {"nope"}, "job": {"invoices"}}, http.StatusNotFound, "unknown job"},
		{"long note", "action/pause", url.Values{"role": {"billing"}, "job": {"invoices"}, "note": {strings.Repeat("x", dashboard.MaxNote+1)}}, http.StatusBadRequest, "at most 500"},
		{"unknown role", "action/resign", url.Values{"role": {"nope"}, "fence": {fence}}, http.StatusNotFound, `unknown role &#34;nope&#34;`},
		{"stale fence", "action/resign", url.Values{"role": {"billing"}, "fence": {"999999"}, "leader": {"alpha"}}, http.StatusConflict, "has ended: alpha leads"},
		{"stale leader", "action/resign", url.Values{"role": {"billing"}, "fence": {fence}, "leader": {"beta"}}, http.StatusConflict, "has ended"},
		{"no fence", "action/resign", url.Values{"role": {"billing"}}, http.StatusBadRequest, "no valid fence"},
	} {
		tc.form.Set("csrf", csrf)
		status, body := f.post(c, tc.path, tc.form, nil)
		if status != tc.status || !strings.Contains(body, tc.says) || !strings.Contains(body, "Nothing was changed") {
			t.Errorf("%s: status %d, want %d saying %q:\n%s", tc.name, status, tc.status, tc.says, body)
		}
	}
	if f.paused() || !f.alpha.IsLeader() {
		t.Fatalf("bad input changed something: paused %v, alpha leads %v", f.paused(), f.alpha.IsLeader())
	}
}

func TestDashboard_W2_ResignHandsTheRoleOn(t *testing.T) {
	f := newFixture(t, secret)
	c := f.client()
	csrf := f.signIn(c, "alice")
	next := make(chan string, 4)
	defer f.beta.OnNewLeader(func(id string) {
		select {
		case next <- id:
		default:
		}
	})()
	form := url.Values{"csrf": {csrf}, "role": {"billing"}, "fence": {strconv.FormatUint(f.alpha.Fence(), 10)}, "leader": {"alpha"}}
	status, body := f.post(c, "action/resign", form, nil)
	if status != http.StatusOK || !strings.Contains(body, "Asked alpha to step down") {
		t.Fatalf("resign: status %d: %s", status, body)
	}
	var seen []string
	for deadline := time.After(20 * time.Second); len(seen) == 0 || seen[len(seen)-1] != "beta"; {
		select {
		case id := <-next:
			seen = append(seen, id)
		case <-deadline:
			t.Fatalf("beta did not lead within 20s of alpha's resign: beta saw leaders %q; alpha leads %v, beta leads %v",
				seen, f.alpha.IsLeader(), f.beta.IsLeader())
		}
	}
	// The same form again is stale now: the term it named ended.
	status, body = f.post(c, "action/resign", form, nil)
	if status != http.StatusConflict {
		t.Fatalf("stale resign: status %d: %s", status, body)
	}
	_, page := f.get(c, "roles")
	if !strings.Contains(page, `data-leader="beta"`) || !strings.Contains(page, "resigned") || !strings.Contains(page, "beta (this process) became leader") {
		t.Errorf("roles page after resign:\n%s", page)
	}
}

func TestNew_InvalidOptions(t *testing.T) {
	for _, o := range []dashboard.Options{{}, {Lock: nil, Refresh: -1}} {
		if _, err := dashboard.New(o); err == nil || !strings.Contains(err.Error(), "Lock is nil") {
			t.Errorf("New(%+v): %v", o, err)
		}
	}
	lock, _ := memlock.NewLock(locking.DefaultOptions())
	defer lock.Close()
	if _, err := dashboard.New(dashboard.Options{Lock: lock, History: 101}); err == nil || !strings.Contains(err.Error(), "History 101") {
		t.Errorf("History 101: %v", err)
	}
}

// Handing over: refused over a lock that cannot carry it; else the named
// participant must be another participant of the role and the term the
// page showed must still run; then the request names holder and
// successor.
func TestDashboard_W2_H4_HandOverToANamedParticipant(t *testing.T) {
	f := newFixture(t, secret)
	c := f.client()
	csrf := f.signIn(c, "alice")
	fence := strconv.FormatUint(f.alpha.Fence(), 10)
	form := func(to string) url.Values {
		return url.Values{"csrf": {csrf}, "role": {"billing"}, "fence": {fence}, "leader": {"alpha"}, "to": {to}, "note": {"drain alpha"}}
	}

	dashboard.SetHandOver(f.dash, nil)
	if status, body := f.post(c, "action/handover", form("beta"), nil); status != http.StatusNotImplemented || !strings.Contains(body, "not available") {
		t.Errorf("without hand-over: status %d:\n%s", status, body)
	}
	if _, page := f.get(c, "roles"); strings.Contains(page, "action/handover") || !strings.Contains(page, "not available over this lock") {
		t.Errorf("roles page offers hand-over the lock cannot carry:\n%s", page)
	}

	type call struct{ key, owner, target string }
	calls := make(chan call, 4)
	dashboard.SetHandOver(f.dash, func(_ context.Context, key, owner, target string) error {
		calls <- call{key, owner, target}
		return nil
	})
	_, page := f.get(c, "fragment/roles")
	if !strings.Contains(page, "action/handover") || !strings.Contains(page, "<option>beta</option>") || strings.Contains(page, "<option>alpha</option>") {
		t.Errorf("roles page does not offer hand-over to the other participant:\n%s", page)
	}
	for _, tc := range []struct {
		name, to string
		form     url.Values
		status   int
		says     string
	}{
		{"not a participant", "gamma", nil, http.StatusBadRequest, `&#34;gamma&#34; is not a participant of role &#34;billing&#34;; its other participants: beta`},
		{"the leader itself", "alpha", nil, http.StatusBadRequest, "alpha already leads"},
		{"stale term", "beta", url.Values{"csrf": {csrf}, "role": {"billing"}, "fence": {"1"}, "leader": {"alpha"}, "to": {"beta"}}, http.StatusConflict, "has ended"},
		{"unknown role", "beta", url.Values{"csrf": {csrf}, "role": {"nope"}, "fence": {fence}, "to": {"beta"}}, http.StatusNotFound, "unknown role"},
	} {
		fm := tc.form
		if fm == nil {
			fm = form(tc.to)
		}
		if status, body := f.post(c, "action/handover", fm, nil); status != tc.status || !strings.Contains(body, tc.says) || !strings.Contains(body, "Nothing was changed") {
			t.Errorf("%s: status %d, want %d saying %q:\n%s", tc.name, status, tc.status, tc.says, body)
		}
	}
	if len(calls) != 0 {
		t.Fatalf("a refused hand-over was sent: %+v", <-calls)
	}
	status, body := f.post(c, "action/handover", form("beta"), nil)
	if status != http.StatusOK || !strings.Contains(body, "Asked alpha to hand role billing over to beta") {
		t.Fatalf("hand-over: status %d:\n%s", status, body)
	}
	if got := <-calls; got != (call{"leader:billing", "alpha", "beta"}) {
		t.Errorf("request %+v", got)
	}
	if _, audit := f.get(c, "audit"); !strings.Contains(audit, "handover to beta") || !strings.Contains(audit, "drain alpha") {
		t.Errorf("audit page:\n%s", audit)
	}
}
