package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestCLI_O1_Status: status shows every role of the namespace with its
// leader's identity, the lease TTL, the fence and the participants, as a
// table and as JSON; the electors' own view agrees.
func TestCLI_O1_Status(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	a := startReplica(t, srv, "shop", "billing", "replica-a")
	b := startReplica(t, srv, "shop", "billing", "replica-b")
	c := startReplica(t, srv, "shop", "reports", "replica-c")
	startReplica(t, srv, "other", "billing", "elsewhere") // another namespace: not shown
	lead := leaderOf(t, a, b)
	leaderOf(t, c)
	waitFor(t, "both billing replicas registered", func() bool {
		ps, err := a.elector.Participants(t.Context())
		return err == nil && len(ps) == 2
	})

	r := cli(t, "status", "--config", cfg, "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d", r.code)
	}
	st := decode[statusJSON](t, r.out)
	if st.Store.Namespace != "shop" || st.Store.Provider != "redis" || !slices.Equal(st.Store.Addrs, []string{srv.Addr()}) {
		t.Errorf("store = %+v", st.Store)
	}
	roles := map[string]roleJSON{}
	for _, rj := range st.Roles {
		roles[rj.Role] = rj
	}
	if len(roles) != 2 {
		t.Fatalf("roles = %v, want billing and reports", st.Roles)
	}
	billing := roles["billing"]
	if billing.Leader != lead.identity || billing.Key != "leader:billing" {
		t.Errorf("billing = %+v, want leader %s", billing, lead.identity)
	}
	if billing.Fence == 0 || billing.Fence != lead.elector.Fence() {
		t.Errorf("billing fence = %d, elector's %d", billing.Fence, lead.elector.Fence())
	}
	if billing.TTLMillis <= 0 || billing.TTLMillis > 1000 {
		t.Errorf("billing ttl_ms = %d, want in (0, 1000]", billing.TTLMillis)
	}
	var ids []string
	for _, p := range billing.Participants {
		ids = append(ids, p.Identity)
		if p.Leader != (p.Identity == lead.identity) {
			t.Errorf("participant %+v: leader flag wrong (leader is %s)", p, lead.identity)
		}
		if p.Since.IsZero() {
			t.Errorf("participant %+v has no since", p)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"replica-a", "replica-b"}) {
		t.Errorf("billing participants = %v", ids)
	}
	if roles["reports"].Leader != "replica-c" {
		t.Errorf("reports = %+v", roles["reports"])
	}

	// The table, with the Go-style single-dash flag, for one role.
	r = cli(t, "status", "billing", "-config", cfg)
	if r.code != exitOK {
		t.Fatalf("exit %d", r.code)
	}
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ROLE") {
		t.Fatalf("table:\n%s", r.out)
	}
	for _, want := range []string{"billing", lead.identity, "replica-a", "replica-b"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row %q lacks %q", lines[1], want)
		}
	}
	for _, h := range []string{"LEADER", "TTL", "FENCE", "PARTICIPANTS"} {
		if !strings.Contains(lines[0], h) {
			t.Errorf("header %q lacks %s", lines[0], h)
		}
	}

	// A role whose only elector stopped stays known (its fence is kept)
	// and shows nobody leading and no participants.
	reportsFence := c.elector.Fence()
	if err := c.elector.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	r = cli(t, "status", "reports", "--config", cfg, "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d", r.code)
	}
	if got := decode[statusJSON](t, r.out).Roles[0]; got.Leader != "" || got.TTLMillis != 0 || got.Fence != 0 || got.LastFence != reportsFence || len(got.Participants) != 0 {
		t.Errorf("stopped role = %+v, want no leader, last_fence %d", got, reportsFence)
	}
	r = cli(t, "status", "reports", "--config", cfg)
	if row := strings.Fields(strings.Split(r.out, "\n")[1]); !slices.Equal(row, []string{"reports", "-", "-", "-", "-"}) {
		t.Errorf("stopped role row = %q", row)
	}
}

// TestCLI_O1_Resign: resign asks the leader to step down through the
// notification channel and another participant leads; the command reports
// the new leader and the handover's latency (logged, not asserted).
func TestCLI_O1_Resign(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	a := startReplica(t, srv, "shop", "billing", "replica-a")
	b := startReplica(t, srv, "shop", "billing", "replica-b")
	old := leaderOf(t, a, b)
	next := a
	if old == a {
		next = b
	}
	oldFence := old.elector.Fence()

	r := cli(t, "resign", "billing", "--config", cfg, "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d", r.code)
	}
	h := decode[handoverJSON](t, r.out)
	if h.Previous != old.identity || h.PreviousFence != oldFence {
		t.Errorf("previous = %s fence %d, want %s fence %d", h.Previous, h.PreviousFence, old.identity, oldFence)
	}
	if h.Leader != next.identity || h.Fence <= oldFence {
		t.Errorf("new leader = %s fence %d, want %s with a fence above %d", h.Leader, h.Fence, next.identity, oldFence)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := next.elector.WaitForLeadership(ctx); err != nil {
		t.Fatalf("%s does not lead: %v", next.identity, err)
	}
	if old.elector.IsLeader() {
		t.Errorf("%s still leads", old.identity)
	}
	t.Logf("resign → new leader: %.2f ms (as the CLI observed it)", h.LatencyMillis)

	// The table form names both.
	leaderOf(t, a, b)
	time.Sleep(testOptions().RetryInterval) // let the resigned replica contend again
	r = cli(t, "resign", "billing", "--config", cfg)
	if r.code != exitOK || !strings.Contains(r.out, "stepped down from role billing") {
		t.Errorf("exit %d, out %q", r.code, r.out)
	}
}

// TestCLI_O1_Watch: watch prints the current leader, then a handover as it
// happens (here: the leader stops, releasing the lease).
func TestCLI_O1_Watch(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	replicas := []*replica{
		startReplica(t, srv, "shop", "billing", "replica-a"),
		startReplica(t, srv, "shop", "billing", "replica-b"),
		startReplica(t, srv, "shop", "billing", "replica-c"),
	}
	for _, asJSON := range []bool{false, true} {
		old := leaderOf(t, replicas...)
		replicas = slices.DeleteFunc(replicas, func(r *replica) bool { return r == old })

		var out, errOut syncBuffer
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		args := []string{"watch", "--config", cfg, "--interval", "200ms"}
		if asJSON {
			args = append(args, "--json")
		}
		done := make(chan int, 1)
		go func() { done <- run(ctx, args, stdio{in: strings.NewReader(""), out: &out, err: &errOut}) }()
		waitFor(t, "watch prints the current leader", func() bool { return strings.Contains(out.String(), old.identity) })

		stopCtx, stopCancel := context.WithTimeout(t.Context(), 5*time.Second)
		if err := old.elector.Stop(stopCtx); err != nil {
			t.Fatal(err)
		}
		stopCancel()
		next := leaderOf(t, replicas...)
		waitFor(t, "watch prints the acquisition by "+next.identity, func() bool {
			for line := range strings.SplitSeq(out.String(), "\n") {
				if strings.Contains(line, "acquired") && strings.Contains(line, next.identity) {
					return true
				}
			}
			return false
		})
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("watch exit %d, stderr %s", code, errOut.String())
		}
		t.Logf("watch (json=%v):\n%s", asJSON, out.String())
		if asJSON {
			var events []string
			for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
				w := decode[watchJSON](t, line)
				events = append(events, w.Event+":"+w.Leader)
			}
			if events[0] != watchLeading+":"+old.identity || !slices.Contains(events, watchAcquired+":"+next.identity) {
				t.Errorf("events = %v", events)
			}
		} else if !strings.Contains(out.String(), "released") && !strings.Contains(out.String(), "previous="+old.identity) {
			t.Errorf("no release or handover from %s in:\n%s", old.identity, out.String())
		}
	}
}

// TestCLI_O1_ReleaseForce: release refuses without --force (usage) and
// without a terminal or --yes (error, nothing deleted); with --yes, or
// with the role's name typed on a terminal, it deletes the lease and
// another participant leads.
func TestCLI_O1_ReleaseForce(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	a := startReplica(t, srv, "shop", "billing", "replica-a")
	b := startReplica(t, srv, "shop", "billing", "replica-b")
	old := leaderOf(t, a, b)

	if r := cli(t, "release", "billing", "--config", cfg); r.code != exitUsage || !strings.Contains(r.errOut, "force") {
		t.Errorf("without --force: exit %d, stderr %q", r.code, r.errOut)
	}
	r := cli(t, "release", "--force", "billing", "--config", cfg)
	if r.code != exitError || !strings.Contains(r.errOut, "WARNING") || !strings.Contains(r.errOut, "--yes") {
		t.Errorf("without a terminal: exit %d, stderr %q", r.code, r.errOut)
	}
	if !old.elector.IsLeader() {
		t.Fatalf("%s lost the role although release refused", old.identity)
	}
	r = cliWith(t, stdio{tty: true, in: strings.NewReader("reports\n")}, "release", "--force", "billing", "--config", cfg)
	if r.code != exitError || !old.elector.IsLeader() {
		t.Errorf("wrong confirmation: exit %d, %s leads: %v", r.code, old.identity, old.elector.IsLeader())
	}

	r = cli(t, "release", "--force", "--yes", "billing", "--config", cfg, "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d", r.code)
	}
	h := decode[handoverJSON](t, r.out)
	if h.Previous != old.identity || h.Leader == "" || h.Fence <= h.PreviousFence {
		t.Errorf("release = %+v", h)
	}
	t.Logf("release → new leader: %.2f ms", h.LatencyMillis)

	// The replica whose lease was deleted believes it leads until its next
	// renewal: Redis, not the electors, says who holds the lease now.
	r = cliWith(t, stdio{tty: true, in: strings.NewReader("billing\n")}, "release", "--force", "billing", "--config", cfg, "--wait", "0")
	if r.code != exitOK || !strings.Contains(r.out, "Deleted the lease of role billing (held by "+h.Leader) {
		t.Errorf("confirmed on a terminal: exit %d, out %q", r.code, r.out)
	}
}

// TestCLI_O1_BadInput: the command line's mistakes exit 2 with the usage on
// stderr; failures exit 1 with one clear line; passwords never show.
func TestCLI_O1_BadInput(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	startReplica(t, srv, "shop", "billing", "replica-a")
	refused := writeConfig(t, "127.0.0.1:1", "shop")
	memory := writeSpec(t, configSpec{addr: srv.Addr(), namespace: "shop", provider: "memory"})

	usage := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"statsu"}, `unknown command "statsu"`},
		{"unknown flag", []string{"status", "--bogus"}, "unknown flag: --bogus"},
		{"unknown shorthand", []string{"status", "-x"}, "unknown shorthand flag: 'x'"},
		{"missing role", []string{"resign"}, "want 1 argument(s) ROLE, got 0"},
		{"extra argument", []string{"history", "billing"}, "want 2 argument(s) ROLE JOB, got 1"},
		{"bad duration", []string{"resign", "billing", "--wait", "soon"}, `invalid argument "soon"`},
	}
	for _, tc := range usage {
		t.Run(tc.name, func(t *testing.T) {
			r := cli(t, append(tc.args, "--config", cfg)...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d", r.code, exitUsage)
			}
			if !strings.Contains(r.errOut, tc.want) || !strings.Contains(r.errOut, "Usage:") {
				t.Errorf("stderr lacks %q or the usage:\n%s", tc.want, r.errOut)
			}
			if r.out != "" {
				t.Errorf("stdout not empty: %q", r.out)
			}
		})
	}

	t.Run("unreachable redis", func(t *testing.T) {
		start := time.Now()
		r := cli(t, "status", "--config", refused)
		if r.code != exitError {
			t.Errorf("exit %d", r.code)
		}
		if want := "hostloom: redis 127.0.0.1:1 unreachable: connection refused\n"; r.errOut != want {
			t.Errorf("stderr %q, want %q", r.errOut, want)
		}
		if d := time.Since(start); d > 2*time.Second+time.Second {
			t.Logf("took %v (dial_timeout 2s)", d)
		}
	})
	t.Run("no such role", func(t *testing.T) {
		for _, args := range [][]string{{"status", "nope"}, {"resign", "nope"}, {"release", "--force", "--yes", "nope"}, {"jobs", "nope"}, {"pause", "nope", "job"}} {
			r := cli(t, append(args, "--config", cfg)...)
			if r.code != exitError || r.errOut != "hostloom: no such role \"nope\" in namespace \"shop\"\n" {
				t.Errorf("%v: exit %d, stderr %q", args, r.code, r.errOut)
			}
		}
	})
	t.Run("memory provider", func(t *testing.T) {
		r := cli(t, "status", "--config", memory)
		if r.code != exitError || !strings.Contains(r.errOut, "needs provider redis") {
			t.Errorf("exit %d, stderr %q", r.code, r.errOut)
		}
	})
	t.Run("config errors name the key", func(t *testing.T) {
		bad := writeSpec(t, configSpec{addr: srv.Addr(), namespace: "shop", lease: "-5s"})
		r := cli(t, "status", "--config", bad)
		if r.code != exitError || !strings.Contains(r.errOut, "leadership.lease") {
			t.Errorf("exit %d, stderr %q", r.code, r.errOut)
		}
		r = cli(t, "status", "--config", "/nonexistent/app.yaml")
		if r.code != exitError || !strings.Contains(r.errOut, "/nonexistent/app.yaml") {
			t.Errorf("missing file: exit %d, stderr %q", r.code, r.errOut)
		}
	})
	t.Run("environment configures like the app", func(t *testing.T) {
		env := []string{"HOSTLOOM_LOCKING__PROVIDER=redis", "HOSTLOOM_LOCKING__NAMESPACE=shop", "HOSTLOOM_LOCKING__REDIS__ADDRS=" + srv.Addr()}
		r := cliWith(t, stdio{environ: env}, "status", "--json")
		if r.code != exitOK || decode[statusJSON](t, r.out).Roles[0].Leader != "replica-a" {
			t.Errorf("exit %d, out %s", r.code, r.out)
		}
		r = cliWith(t, stdio{environ: []string{"HOSTLOOM_CONFIG=" + cfg}}, "status", "--json")
		if r.code != exitOK || decode[statusJSON](t, r.out).Roles[0].Leader != "replica-a" {
			t.Errorf("HOSTLOOM_CONFIG: exit %d, out %s", r.code, r.out)
		}
	})
	t.Run("passwords never show", func(t *testing.T) {
		const password = "s3cret-Pa55word"
		admin := srv.NewClient()
		defer admin.Close()
		if err := admin.ConfigSet(t.Context(), "requirepass", password).Err(); err != nil {
			t.Fatal(err)
		}
		defer admin.ConfigSet(context.Background(), "requirepass", "")
		right := writeSpec(t, configSpec{addr: srv.Addr(), namespace: "shop", password: password})
		wrong := writeSpec(t, configSpec{addr: srv.Addr(), namespace: "shop", password: "not-" + password})

		r := cli(t, "status", "--config", right, "--json")
		if r.code != exitOK || !decode[statusJSON](t, r.out).Store.Password {
			t.Errorf("right password: exit %d", r.code)
		}
		r2 := cli(t, "status", "--config", wrong)
		if r2.code != exitError || !strings.Contains(r2.errOut, `refused the credentials of user "default"`) {
			t.Errorf("wrong password: exit %d, stderr %q", r2.code, r2.errOut)
		}
		for _, s := range []string{r.out, r.errOut, r2.out, r2.errOut} {
			if strings.Contains(s, password) {
				t.Errorf("password printed: %q", s)
			}
		}
	})
}

// TestCLI_O1_Cluster: over Redis Cluster, status finds the roles on every
// master and resign moves a role; jobs finds the job records on whichever
// master holds them.
func TestCLI_O1_Cluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	cl := redistest.StartCluster(t, 3)
	var addrs []string
	for _, a := range cl.Addrs() {
		addrs = append(addrs, strconv.Quote(a))
	}
	cfg := writeSpec(t, configSpec{namespace: "shop", cluster: true, addrs: addrs})
	var rs []*replica
	roles := []string{"billing", "reports", "shipping", "search"}
	for _, role := range roles {
		for _, id := range []string{"replica-a", "replica-b"} {
			rs = append(rs, startReplicaOn(t, cl.Client(t), "shop", role, id))
		}
	}
	for i := 0; i < len(rs); i += 2 {
		leaderOf(t, rs[i], rs[i+1])
	}
	startScheduler(t, leaderOf(t, rs[0], rs[1]))

	r := cli(t, "status", "--config", cfg, "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d", r.code)
	}
	var got []string
	for _, rj := range decode[statusJSON](t, r.out).Roles {
		got = append(got, rj.Role)
		if rj.Leader == "" || rj.Fence == 0 {
			t.Errorf("role %+v: no leader or fence", rj)
		}
	}
	want := slices.Clone(roles)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("roles = %v, want %v", got, want)
	}

	h := decode[handoverJSON](t, cli(t, "resign", "search", "--config", cfg, "--json").out)
	if h.Leader == "" || h.Leader == h.Previous || h.Fence <= h.PreviousFence {
		t.Errorf("resign over Cluster = %+v", h)
	}

	waitFor(t, "a run recorded", func() bool {
		j := decode[jobsOut](t, cli(t, "jobs", "--config", cfg, "--json").out).Jobs
		return len(j) == 1 && j[0].Role == "billing" && j[0].Job == "invoices" && j[0].Runs > 0
	})
}
