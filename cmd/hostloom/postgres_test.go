package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/core/testing/pgtest"
)

// pg is the private PostgreSQL server of the test run, started by the
// first test that needs it and stopped by TestMain.
var pg struct {
	once sync.Once
	srv  *pgtest.Server
	err  error
	seq  atomic.Int64
}

func stopPostgres() {
	if pg.srv != nil {
		pg.srv.Stop()
	}
}

// pgPassword is in every DSN the tests write; the server trusts local
// users, so it is never checked: it is there to be kept out of the output.
const pgPassword = "cli-s3cret"

// newPostgres creates a fresh database and returns its DSN (with
// pgPassword); it is dropped when t ends. Without a server it skips t
// (fails it when pgtest.Required).
func newPostgres(t *testing.T) string {
	t.Helper()
	pg.once.Do(func() { pg.srv, pg.err = pgtest.Start() })
	if pg.err != nil {
		if pgtest.Required() {
			t.Fatalf("PostgreSQL is required here (CI or HOSTLOOM_REQUIRE_POSTGRES=1) but did not start: %v", pg.err)
		}
		t.Skipf("PostgreSQL did not start, skipping: %v", pg.err)
	}
	ctx := context.Background()
	name := fmt.Sprintf("cli%d_%s", pg.seq.Add(1), strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	admin, err := pgx.Connect(ctx, pg.srv.ConnString("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, pg.srv.ConnString("postgres"))
		if err != nil {
			t.Error(err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE "+ident+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	})
	return pgDSN("postgres", name)
}

func pgDSN(user, db string) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", user, pgPassword, pg.srv.Port(), db)
}

// writePgConfig writes an app.yaml with provider postgres and nothing
// else about the backend: the DSN comes from the environment when dsn is
// "" (see pgEnv).
func writePgConfig(t *testing.T, namespace, dsn string) string {
	t.Helper()
	yaml := fmt.Sprintf(`locking:
  provider: postgres
  namespace: %s
leadership:
  lease: 1s
  renew_interval: 300ms
  retry_interval: 500ms
`, namespace)
	if dsn != "" {
		yaml = strings.Replace(yaml, "  namespace:", fmt.Sprintf("  postgres:\n    dsn: %q\n  namespace:", dsn), 1)
	}
	path := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startPgReplica is startReplica over pglock: its own pool on dsn.
func startPgReplica(t *testing.T, dsn, namespace, role, identity string) *replica {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	o := locking.DefaultOptions()
	o.Namespace = namespace
	lock, err := pglock.NewLock(pool, pglock.Options{}, o)
	if err != nil {
		t.Fatal(err)
	}
	return startElector(t, lock, role, identity, func() { pool.Close() })
}

func noPassword(t *testing.T, r result) {
	t.Helper()
	if strings.Contains(r.out+r.errOut, pgPassword) {
		t.Errorf("the output shows the DSN's password:\n%s\n%s", r.out, r.errOut)
	}
}

// TestCLI_D4_StatusOverPostgres: with provider postgres and the DSN (in
// the file, or only in HOSTLOOM_LOCKING__POSTGRES__DSN), status shows the
// leader, fence, TTL and participants the database holds, and where it
// looked without the password.
func TestCLI_D4_StatusOverPostgres(t *testing.T) {
	dsn := newPostgres(t)
	a := startPgReplica(t, dsn, "shop", "billing", "replica-a")
	b := startPgReplica(t, dsn, "shop", "billing", "replica-b")
	startPgReplica(t, dsn, "other", "billing", "elsewhere")
	lead := leaderOf(t, a, b)
	waitFor(t, "both billing replicas registered", func() bool {
		ps, err := a.elector.Participants(t.Context())
		return err == nil && len(ps) == 2
	})
	for _, viaEnv := range []bool{false, true} {
		sio := stdio{}
		cfg := writePgConfig(t, "shop", dsn)
		if viaEnv {
			cfg = writePgConfig(t, "shop", "")
			sio.environ = []string{"HOSTLOOM_LOCKING__POSTGRES__DSN=" + dsn}
		}
		r := cliWith(t, sio, "status", "--config", cfg, "--json")
		if r.code != exitOK {
			t.Fatalf("exit %d: %s", r.code, r.errOut)
		}
		noPassword(t, r)
		st := decode[statusJSON](t, r.out)
		if st.Store.Provider != "postgres" || st.Store.Namespace != "shop" || st.Store.Username != "postgres" || !st.Store.Password ||
			st.Store.Table != pglock.DefaultTable || len(st.Store.Addrs) != 1 || !strings.HasPrefix(st.Store.Addrs[0], "127.0.0.1:") {
			t.Errorf("store = %+v", st.Store)
		}
		if len(st.Roles) != 1 {
			t.Fatalf("roles = %+v, want billing only", st.Roles)
		}
		billing := st.Roles[0]
		if billing.Leader != lead.identity || billing.Fence == 0 || billing.Fence != lead.elector.Fence() || billing.TTLMillis <= 0 || billing.TTLMillis > 1000 {
			t.Errorf("billing = %+v, want leader %s fence %d", billing, lead.identity, lead.elector.Fence())
		}
		var ids []string
		for _, p := range billing.Participants {
			ids = append(ids, p.Identity)
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []string{"replica-a", "replica-b"}) {
			t.Errorf("participants = %v", ids)
		}
	}
	r := cli(t, "status", "billing", "--config", writePgConfig(t, "shop", dsn))
	if r.code != exitOK || !strings.Contains(r.out, lead.identity) {
		t.Errorf("table: exit %d\n%s", r.code, r.out)
	}
}

// TestCLI_D4_ResignAndWatchOverPostgres: resign hands the role over
// through a resign request (LISTEN/NOTIFY), and watch prints the
// acquisition by the next leader.
func TestCLI_D4_ResignAndWatchOverPostgres(t *testing.T) {
	dsn := newPostgres(t)
	cfg := writePgConfig(t, "shop", dsn)
	a := startPgReplica(t, dsn, "shop", "billing", "replica-a")
	b := startPgReplica(t, dsn, "shop", "billing", "replica-b")
	old := leaderOf(t, a, b)
	next := a
	if old == a {
		next = b
	}

	var out, errOut syncBuffer
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"watch", "--config", cfg, "--interval", "200ms", "--json"}, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	}()
	waitFor(t, "watch prints the current leader", func() bool { return strings.Contains(out.String(), old.identity) })

	oldFence := old.elector.Fence()
	r := cli(t, "resign", "billing", "--config", cfg, "--json")
	if r.code != exitOK {
		t.Fatalf("resign exit %d: %s", r.code, r.errOut)
	}
	noPassword(t, r)
	h := decode[handoverJSON](t, r.out)
	if h.Previous != old.identity || h.Leader != next.identity || h.Fence <= oldFence {
		t.Errorf("handover = %+v, want %s → %s with a fence above %d", h, old.identity, next.identity, oldFence)
	}
	t.Logf("resign → new leader over PostgreSQL: %.2f ms (as the CLI observed it)", h.LatencyMillis)

	waitFor(t, "watch prints the acquisition by "+next.identity, func() bool {
		for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
			if line != "" && decode[watchJSON](t, line).Event == watchAcquired && strings.Contains(line, next.identity) {
				return true
			}
		}
		return false
	})
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("watch exit %d, stderr %s", code, errOut.String())
	}
	if strings.Contains(out.String()+errOut.String(), pgPassword) {
		t.Error("watch shows the DSN's password")
	}
	t.Logf("watch:\n%s", out.String())
}

// TestCLI_O1_ReleaseForceOverPostgres: over PostgreSQL release --force
// refuses without a terminal or --yes (nothing deleted), and with --yes
// deletes the lease row's holder, keeping its fence (the next term's fence
// is greater, G1), and announces the release through NOTIFY, so the other
// participant takes the role; the announcement reaches a subscriber.
func TestCLI_O1_ReleaseForceOverPostgres(t *testing.T) {
	dsn := newPostgres(t)
	cfg := writePgConfig(t, "shop", dsn)
	a := startPgReplica(t, dsn, "shop", "billing", "replica-a")
	b := startPgReplica(t, dsn, "shop", "billing", "replica-b")
	old := leaderOf(t, a, b)
	fence := old.elector.Fence()

	r := cli(t, "release", "--force", "billing", "--config", cfg)
	if r.code != exitError || !strings.Contains(r.errOut, "WARNING") || !strings.Contains(r.errOut, "--yes") {
		t.Errorf("without a terminal: exit %d, stderr %q", r.code, r.errOut)
	}
	r = cliWith(t, stdio{tty: true, in: strings.NewReader("reports\n")}, "release", "--force", "billing", "--config", cfg)
	if r.code != exitError || !strings.Contains(r.errOut, "nothing deleted") {
		t.Errorf("wrong confirmation: exit %d, stderr %q", r.code, r.errOut)
	}
	if !old.elector.IsLeader() || old.elector.Fence() != fence {
		t.Fatalf("%s lost the role although release refused", old.identity)
	}

	// A subscriber of the role's key, as a candidate is.
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	sub, err := pglock.New(pool, pglock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	key, err := leadership.DefaultOptions().ResolveLockKey("billing", 0)
	if err != nil {
		t.Fatal(err)
	}
	pkey, err := old.lock.ProviderKey(key)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan locking.Event, 16)
	stop, err := sub.Subscribe(pkey, func(e locking.Event) {
		select {
		case events <- e:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if e := <-events; e.Kind != locking.EventSubscribed {
		t.Fatalf("first event %+v, want subscribed", e)
	}

	r = cli(t, "release", "--force", "--yes", "billing", "--config", cfg, "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	noPassword(t, r)
	h := decode[handoverJSON](t, r.out)
	if h.Previous != old.identity || h.PreviousFence != fence || h.Leader == "" || h.Fence <= h.PreviousFence {
		t.Errorf("release = %+v, want %s (fence %d) followed by a greater fence", h, old.identity, fence)
	}
	released := false
	for !released {
		select {
		case e := <-events:
			released = e.Kind == locking.EventReleased
		case <-time.After(10 * time.Second):
			t.Fatal("no release announced through NOTIFY")
		}
	}
	t.Logf("release → new leader: %.2f ms", h.LatencyMillis)
}

// TestCLI_D4_JobsOverPostgres: jobs, history, pause and resume over the
// PostgreSQL job store.
func TestCLI_D4_JobsOverPostgres(t *testing.T) {
	dsn := newPostgres(t)
	cfg := writePgConfig(t, "shop", dsn)
	r := startPgReplica(t, dsn, "shop", "billing", "replica-a")
	checkJobsCLI(t, r, cfg)
}

// TestCLI_D4_PostgresBadInput: a user the server refuses, a missing
// database and a DSN that does not parse are errors naming
// locking.postgres.dsn and its source; a server that does not answer is
// "unreachable"; none shows the password.
func TestCLI_D4_PostgresBadInput(t *testing.T) {
	dsn := newPostgres(t)
	_ = dsn
	for _, tt := range []struct {
		name, dsn string
		want      []string
	}{
		{"unknown user", pgDSN("nosuchuser", "postgres"), []string{"locking.postgres.dsn", `user "nosuchuser"`, "env HOSTLOOM_LOCKING__POSTGRES__DSN"}},
		{"missing database", pgDSN("postgres", "nosuchdb"), []string{"locking.postgres.dsn", `database "nosuchdb"`}},
		{"unparsable", "postgres://svc:" + pgPassword + "@127.0.0.1:port/db", []string{"locking.postgres.dsn", "does not parse"}},
		{"nobody listens", "postgres://svc:" + pgPassword + "@127.0.0.1:1/db?sslmode=disable", []string{"postgres 127.0.0.1:1 unreachable"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := cliWith(t, stdio{environ: []string{"HOSTLOOM_LOCKING__POSTGRES__DSN=" + tt.dsn}}, "status", "--config", writePgConfig(t, "shop", ""))
			if r.code != exitError {
				t.Fatalf("exit %d", r.code)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.errOut, w) {
					t.Errorf("stderr %q lacks %q", r.errOut, w)
				}
			}
			noPassword(t, r)
		})
	}
	// No DSN at all.
	r := cli(t, "status", "--config", writePgConfig(t, "shop", ""))
	if r.code != exitError || !strings.Contains(r.errOut, "locking.postgres.dsn") {
		t.Errorf("no DSN: exit %d, %q", r.code, r.errOut)
	}
}

// TestCLI_S11_JobsScheduleOverPostgres: jobs shows the schedule and the
// next run over PostgreSQL too.
func TestCLI_S11_JobsScheduleOverPostgres(t *testing.T) {
	dsn := newPostgres(t)
	cfg := writePgConfig(t, "shop", dsn)
	r := startPgReplica(t, dsn, "shop", "billing", "replica-a")
	leaderOf(t, r)
	startScheduler(t, r)
	waitFor(t, "a run recorded", func() bool {
		st, err := r.lock.JobStatus(t.Context(), scheduling.JobKey("billing", "invoices"))
		return err == nil && st.Runs >= 1
	})
	checkScheduleShown(t, cfg, "@every 50ms")
	res := cli(t, "status", "--config", cfg, "--namespace", "staging")
	if want := `No roles in namespace "staging" (--namespace)`; res.code != exitOK || !strings.Contains(res.out, want) {
		t.Errorf("status --namespace staging over PostgreSQL: exit %d, %q; want %q", res.code, res.out, want)
	}
}
