package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	yaml "go.yaml.in/yaml/v3"

	"github.com/hostloom/hostloom/backends/etcd/etcdlockbuild"
	"github.com/hostloom/hostloom/backends/postgres/pglockbuild"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/testing/redistest"
	"github.com/hostloom/hostloom/schedulingfx"
)

// testSettings runs the service on a free port with only the given
// environment.
func testSettings(env ...string) settings {
	if env == nil {
		env = []string{}
	}
	return settings{httpAddr: "127.0.0.1:0", environ: env}
}

// TestApp_F1_T2_LeaseOverMaxLeaseFailsStart: a lease above max_lease fails
// start once per role, and nothing is logged at Warn before it as if the app
// would carry on with a capped lease (the memory lock's own Warn aside).
func TestApp_F1_T2_LeaseOverMaxLeaseFailsStart(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	app := newApp(testSettings(
		"HOSTLOOM_LEADERSHIP__LEASE=10m",
		"HOSTLOOM_LEADERSHIP__RENEW_INTERVAL=1m",
		"HOSTLOOM_LOCKING__MAX_LEASE=1m",
	), zap.New(core))
	if err := app.Err(); err != nil {
		t.Fatalf("fx.New: %v", err)
	}
	ctx := context.Background()
	err := app.Start(ctx)
	if err == nil {
		_ = app.Stop(ctx)
		t.Fatal("Start succeeded")
	}
	const want = `role "billing": lease 10m0s exceeds locking max_lease 1m0s`
	if n := strings.Count(err.Error(), want); n != 1 {
		t.Fatalf("Start error %v: %d times %q, want once", err, n, want)
	}
	for _, e := range logs.All() {
		if e.Level == zapcore.WarnLevel && e.Message != "HostLoomLockMemory" {
			t.Errorf("logged %s %s %v before the start failed", e.Level, e.Message, e.ContextMap())
		}
	}
	if n := logs.FilterMessage("LeadershipLeaseCapped").Len(); n != 0 {
		t.Errorf("LeadershipLeaseCapped logged %d times by an app whose start fails on that lease", n)
	}
}

func TestApp_F2_BadValueFailsNamingTheKey(t *testing.T) {
	app := newApp(testSettings("HOSTLOOM_LEADERSHIP__LEASE=banana"), zap.NewNop())
	err := app.Err()
	if err == nil {
		t.Fatal("fx.New succeeded")
	}
	for _, want := range []string{`leadership.lease: invalid duration "banana"`, "env HOSTLOOM_LEADERSHIP__LEASE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\ndoes not contain %q", err, want)
		}
	}
}

func TestApp_MissingConfigFileFails(t *testing.T) {
	s := testSettings()
	s.configPath = t.TempDir() + "/nope.yaml"
	err := newApp(s, zap.NewNop()).Err()
	if err == nil || !strings.Contains(err.Error(), `config: file "`+s.configPath+`": no such file or directory`) {
		t.Fatalf("error %v", err)
	}
}

// commentedKeys are the keys config.yaml documents in a comment rather
// than sets, with the commented line: setting them changes behaviour
// (paused, set, overrides the stored pause at every start and needs a
// slot store).
var commentedKeys = map[string]string{
	"scheduling.jobs.<job>.paused": "      # paused: false\n",
}

// TestSampleConfig_DocumentsEveryKey keeps config.yaml complete: it sets
// every key config.Keys lists, except commentedKeys, which it shows in a
// comment, and nothing else, and it loads.
func TestSampleConfig_DocumentsEveryKey(t *testing.T) {
	var doc map[string]any
	if err := yaml.Unmarshal(embeddedConfig, &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			key := prefix + k
			switch prefix {
			case "leadership.roles.":
				key = prefix + "<role>"
			case "scheduling.jobs.":
				key = prefix + "<job>"
			}
			if sub, ok := v.(map[string]any); ok {
				walk(key+".", sub)
				continue
			}
			got = append(got, key)
		}
	}
	walk("", doc)
	for k, line := range commentedKeys {
		if !strings.Contains(string(embeddedConfig), line) {
			t.Errorf("config.yaml lacks the commented key %s: %q", k, line)
		}
		got = append(got, k)
	}
	var want []string
	for _, k := range config.Keys(pglockbuild.Backend{}, etcdlockbuild.Backend{}) {
		want = append(want, k.Name)
	}
	slices.Sort(got)
	got = slices.Compact(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("config.yaml keys\n%q\nconfig.Keys\n%q", got, want)
	}
	if _, err := config.Load("", config.WithYAML("config.yaml", embeddedConfig), config.WithEnviron(nil), config.WithBackends(pglockbuild.Backend{}, etcdlockbuild.Backend{})); err != nil {
		t.Fatalf("the sample does not load: %v", err)
	}
}

type electors struct {
	fx.In
	Billing          leadership.Leadership `name:"billing"`
	Inventory        leadership.Leadership `name:"inventory"`
	BillingElector   *leadership.Elector   `name:"billing"`
	InventoryElector *leadership.Elector   `name:"inventory"`
	Schedulers       *schedulingfx.Schedulers
}

// checkJobsPage reads /jobs of the memory-lock app, which leads billing:
// the invoices job's state and history (S11), and its paused state
// following Pause and Resume (S10).
func checkJobsPage(t *testing.T, ctx context.Context, base string, got electors) {
	t.Helper()
	billing := got.BillingElector
	// The latest slot is caught up at once when billing is won (S8), so
	// the first run follows the start closely.
	var jobs []jobStatus
	eventually(t, 10*time.Second, "a finished invoices run on /jobs", func() error {
		jobs = nil
		getJSON(t, base+"/jobs", &jobs)
		// A snapshot between runs: the latest run started here has
		// finished and is the newest in the store.
		if len(jobs) != 1 || jobs[0].Running || len(jobs[0].History) == 0 || jobs[0].LastOutcome == "" ||
			jobs[0].History[0].Ended.IsZero() || !jobs[0].History[0].Slot.Equal(jobs[0].LastSlot) {
			return fmt.Errorf("/jobs = %+v", jobs)
		}
		return nil
	})
	j := jobs[0]
	if j.Role != "billing" || j.Name != "invoices" || j.Schedule != "every 5s" || j.Paused ||
		j.LastOutcome != "success" || j.LastError != "" || j.LastSlot.IsZero() || j.LastRun.Before(j.LastSlot) ||
		!j.LastSuccess.Equal(j.LastRun) || !j.Next.After(j.LastSlot) || j.HistoryNote != "" || j.HistoryError != "" {
		t.Errorf("/jobs entry %+v", j)
	}
	if len(j.History) > historyLen {
		t.Errorf("/jobs shows %d runs, want at most %d", len(j.History), historyLen)
	}
	h := j.History[0]
	if h.Identity != billing.Identity() || h.Fence != billing.Fence() ||
		h.Outcome != "success" || h.Attempt != 1 || h.Ended.Before(h.Started) {
		t.Errorf("/jobs newest run %+v, want slot %v by %s with fence %d", h, j.LastSlot, billing.Identity(), billing.Fence())
	}
	for i := 1; i < len(j.History); i++ {
		if !j.History[i].Slot.Before(j.History[i-1].Slot) {
			t.Errorf("/jobs history not newest first: %+v", j.History)
		}
	}

	s := got.Schedulers.For(roleBilling)
	for _, paused := range []bool{true, false} {
		set := s.Resume
		if paused {
			set = s.Pause
		}
		if err := set(ctx, "invoices"); err != nil {
			t.Fatal(err)
		}
		jobs = nil
		getJSON(t, base+"/jobs", &jobs)
		if len(jobs) != 1 || jobs[0].Paused != paused {
			t.Errorf("/jobs after paused=%t: %+v", paused, jobs)
		}
	}
}

// TestApp_MemoryDefaultLeadsAndServes boots the service as `go run` does
// (no file, no configuration variables) and reads its endpoints.
func TestApp_MemoryDefaultLeadsAndServes(t *testing.T) {
	ctx, base, got, _ := startLeading(t, zapcore.InfoLevel, 10*time.Second)

	var status []roleStatus
	getJSON(t, base+"/leadership", &status)
	if len(status) != 2 || status[0].Role != "billing" || status[1].Role != "inventory" {
		t.Fatalf("/leadership = %+v", status)
	}
	for i, s := range status {
		e := []*leadership.Elector{got.BillingElector, got.InventoryElector}[i]
		if s.Identity != e.Identity() || !s.IsLeader || s.Term != 1 || s.Fence == 0 || s.Fence != e.Fence() ||
			s.Leader != s.Identity || s.SafetyMargin != leadership.Describe(e).SafetyMargin.String() ||
			s.Holder == nil || s.Holder.Identity != s.Identity || s.HolderError != "" ||
			s.LockKey != "leader:"+s.Role || s.ProviderKey != "hostloom-example:lock:leader:"+s.Role || !s.Coordinated {
			t.Errorf("/leadership entry %+v", s)
		}
		// P1: this process is the role's only participant, and the leader.
		if s.ParticipantsError != "" || len(s.Participants) != 1 || s.Participants[0].Identity != s.Identity ||
			!s.Participants[0].Leader || s.Participants[0].Since.IsZero() || s.Participants[0].Since.After(time.Now()) {
			t.Errorf("/leadership %s participants %+v, error %q", s.Role, s.Participants, s.ParticipantsError)
		}
	}
	checkJobsPage(t, ctx, base, got)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(t, base+path); code != http.StatusOK || body != "ok\n" {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	// The Prometheus exporter turns the OpenTelemetry names, units and
	// attributes into its own: dots become underscores, counters end in
	// _total, and {annotation} units add no suffix (seconds add _seconds).
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`hostloom_leadership_is_leader{`,
		`hostloom_role="billing"`,
		`hostloom_identity="`,
		`hostloom_leadership_transitions_total{`,
		`hostloom_leadership_acquire_attempts_total{`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics: no %s in\n%.3000s", want, body)
		}
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// startLeading boots the service with env over testSettings, logging at
// level to an observer, and waits (within timeout) until both roles
// lead. It returns the context that bounds the test, the service's base
// URL, its electors and its logs; the service stops when t ends.
func startLeading(t *testing.T, level zapcore.Level, timeout time.Duration, env ...string) (context.Context, string, electors, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(level)
	var got electors
	app := fx.New(graph(testSettings(env...), zap.New(core)), fx.Populate(&got))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := app.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	for _, l := range []leadership.Leadership{got.Billing, got.Inventory} {
		if err := l.WaitForLeadership(ctx); err != nil {
			t.Fatalf("%s: %v", l.Role(), err)
		}
	}
	addrs := logs.FilterMessage("HTTPListening").All()
	if len(addrs) != 1 {
		t.Fatalf("HTTPListening logged %d times", len(addrs))
	}
	return ctx, "http://" + addrs[0].ContextMap()["addr"].(string), got, logs
}

// checkBackendLeadership checks /leadership over a backend that stores
// holders and participants: both roles lead, each the holder and its
// only participant.
func checkBackendLeadership(t *testing.T, base string) {
	t.Helper()
	var status []roleStatus
	getJSON(t, base+"/leadership", &status)
	if len(status) != 2 {
		t.Fatalf("/leadership = %+v", status)
	}
	for _, s := range status {
		if !s.IsLeader || s.Fence == 0 || s.Holder == nil || s.Holder.Identity != s.Identity || s.HolderError != "" ||
			s.ParticipantsError != "" || len(s.Participants) != 1 || !s.Participants[0].Leader || !s.Coordinated {
			t.Errorf("/leadership entry %+v", s)
		}
	}
}
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	code, body := get(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
}

// TestApp_O3_BusyPortNeverLeads: the HTTP server's OnStart fails (port
// taken); the roles, which contend only after every OnStart hook
// succeeded, never lead.
func TestApp_O3_BusyPortNeverLeads(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := testSettings()
	s.httpAddr = ln.Addr().String()
	var got electors
	app := fx.New(fx.Populate(&got), graph(s, zap.NewNop()))
	if err := app.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "address already in use") {
		_ = app.Stop(context.Background())
		t.Fatalf("Start error %v, want the busy port", err)
	}
	for _, l := range []leadership.Leadership{got.Billing, got.Inventory} {
		if l.IsLeader() || l.Term() != 0 {
			t.Errorf("%s: leader=%t term=%d after a failed start, want never elected (O3)", l.Role(), l.IsLeader(), l.Term())
		}
	}
}

// TestApp_P1_S11_RedisFrozenShowsErrorsPerRoleAndJob: with the server frozen,
// /leadership and /jobs still answer 200 once their lookup budget ends,
// each role and job naming its failed lookup (holder, participants,
// history), and this instance's own view (no I/O) stays on the page.
func TestApp_P1_S11_RedisFrozenShowsErrorsPerRoleAndJob(t *testing.T) {
	srv := redistest.Start(t)
	core, logs := observer.New(zapcore.InfoLevel)
	var got electors
	app := fx.New(graph(testSettings(
		"HOSTLOOM_LOCKING__PROVIDER=redis",
		"HOSTLOOM_LOCKING__REDIS__ADDRS="+srv.Addr(),
	), zap.New(core)), fx.Populate(&got))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	frozen := false
	defer func() {
		if frozen {
			if err := srv.Signal(syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
		if err := app.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	for _, l := range []leadership.Leadership{got.Billing, got.Inventory} {
		if err := l.WaitForLeadership(ctx); err != nil {
			t.Fatalf("%s: %v", l.Role(), err)
		}
	}
	base := "http://" + logs.FilterMessage("HTTPListening").All()[0].ContextMap()["addr"].(string)

	var status []roleStatus
	getJSON(t, base+"/leadership", &status)
	for _, s := range status {
		if len(s.Participants) != 1 || s.Participants[0].Identity != s.Identity || s.Holder == nil {
			t.Errorf("/leadership over a live server: %+v", s)
		}
	}

	// Frozen, the server accepts connections and never answers: every
	// lookup of the request ends with its budget.
	if err := srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen = true
	status = nil
	getJSON(t, base+"/leadership", &status)
	if len(status) != 2 {
		t.Fatalf("/leadership = %+v", status)
	}
	for _, s := range status {
		if s.Identity == "" || s.Term != 1 || s.Holder != nil || s.Participants != nil ||
			!strings.Contains(s.HolderError, `role "`+s.Role+`": holder lookup`) ||
			!strings.Contains(s.ParticipantsError, `role "`+s.Role+`": participants`) {
			t.Errorf("/leadership with the server down: %+v", s)
		}
	}
	var jobs []jobStatus
	getJSON(t, base+"/jobs", &jobs)
	if len(jobs) != 1 || jobs[0].Name != "invoices" || jobs[0].History != nil || jobs[0].HistoryNote != "" ||
		!strings.Contains(jobs[0].HistoryError, `"invoices"`) {
		t.Errorf("/jobs with the server down: %+v", jobs)
	}
}

// TestApp_MissingConfigFileIsOneLine: the service started over a missing
// file prints the error once, naming the file, without a stack trace,
// and exits 1.
func TestApp_MissingConfigFileIsOneLine(t *testing.T) {
	missing := t.TempDir() + "/app.yaml"
	var stderr strings.Builder
	if code := run([]string{"-config", missing, "-http", "127.0.0.1:0"}, &stderr); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	out := stderr.String()
	t.Logf("stderr:\n%s", out)
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, `config: file \"`+missing+`\": no such file or directory`) {
		t.Errorf("stderr is not one line naming %s:\n%s", missing, out)
	}
	if strings.Contains(out, "stack") || strings.Contains(out, ".go:") {
		t.Errorf("stderr carries a stack trace:\n%s", out)
	}
}
