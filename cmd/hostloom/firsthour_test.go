package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestCLI_O1_WatchCountOneCountsTheInitialLine: watch --count 1 prints the
// current leader and exits at once instead of waiting for a change.
func TestCLI_O1_WatchCountOneCountsTheInitialLine(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	a := startReplica(t, srv, "shop", "billing", "replica-a")
	leaderOf(t, a)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var out, errOut syncBuffer
	code := run(ctx, []string{"watch", "billing", "--count", "1", "--json", "--config", cfg}, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	if ctx.Err() != nil {
		t.Fatalf("watch --count 1 returned only when its context ended (no change happened): it did not count the initial line")
	}
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if w := decode[watchJSON](t, lines[0]); len(lines) != 1 || w.Event != watchLeading || w.Leader != "replica-a" {
		t.Fatalf("watch --count 1 printed %q, want one leading line for replica-a", out.String())
	}
}

// TestCLI_O1_WatchPreviousAndForcedDelete: every acquired line names the
// previous holder once watch has seen one, also after a released or
// deleted line; a lease deleted by release --force shows as deleted, a
// leader's own release as released.
func TestCLI_O1_WatchPreviousAndForcedDelete(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	replicas := []*replica{
		startReplica(t, srv, "shop", "billing", "replica-a"),
		startReplica(t, srv, "shop", "billing", "replica-b"),
		startReplica(t, srv, "shop", "billing", "replica-c"),
	}
	first := leaderOf(t, replicas...)

	var out, errOut syncBuffer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"watch", "--config", cfg, "--interval", "5s", "--json"}, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	}()
	events := func() []watchJSON {
		var ws []watchJSON
		for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
			if line != "" {
				ws = append(ws, decode[watchJSON](t, line))
			}
		}
		return ws
	}
	acquiredBy := func(id string) func() bool {
		return func() bool {
			return slices.ContainsFunc(events(), func(w watchJSON) bool { return w.Event == watchAcquired && w.Leader == id })
		}
	}
	waitFor(t, "watch prints the current leader", func() bool { return len(events()) > 0 })

	// A leader's own release: released, then acquired with previous.
	stopCtx, stopCancel := context.WithTimeout(t.Context(), 5*time.Second)
	if err := first.elector.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	stopCancel()
	rest := slices.DeleteFunc(slices.Clone(replicas), func(r *replica) bool { return r == first })
	second := leaderOf(t, rest...)
	waitFor(t, "watch prints the acquisition by "+second.identity, acquiredBy(second.identity))

	// A forced delete: deleted, then acquired with previous.
	if r := cli(t, "release", "--force", "--yes", "billing", "--config", cfg, "--wait", "0"); r.code != exitOK {
		t.Fatalf("release --force: exit %d, %q", r.code, r.errOut)
	}
	third := slices.DeleteFunc(slices.Clone(rest), func(r *replica) bool { return r == second })[0]
	waitFor(t, "watch prints the acquisition by "+third.identity, acquiredBy(third.identity))
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("watch exit %d, stderr %s", code, errOut.String())
	}
	t.Logf("watch:\n%s", out.String())

	var got []string
	for _, w := range events() {
		got = append(got, w.Event+":"+w.Leader+":"+w.Previous)
	}
	want := []string{
		watchLeading + ":" + first.identity + ":",
		watchReleased + ":" + first.identity + ":",
		watchAcquired + ":" + second.identity + ":" + first.identity,
		watchDeleted + ":" + second.identity + ":",
		watchAcquired + ":" + third.identity + ":" + second.identity,
	}
	if !slices.Equal(got, want) {
		t.Errorf("watch events (event:leader:previous)\n got %v\nwant %v", got, want)
	}
}

// TestCLI_O1_JobsPausedSlot: a slot that fell due while the job was paused
// shows as paused, not as the job's last slot (which is the last one run).
func TestCLI_O1_JobsPausedSlot(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	r := startReplica(t, srv, "shop", "billing", "replica-a")
	leaderOf(t, r)
	s := startScheduler(t, r)
	waitFor(t, "a run", func() bool { return !s.Jobs()[0].LastSuccess.IsZero() })
	if res := cli(t, "pause", "billing", "invoices", "--config", cfg); res.code != exitOK {
		t.Fatalf("pause: exit %d, %q", res.code, res.errOut)
	}
	waitFor(t, "the scheduler sees the pause", func() bool { return s.Jobs()[0].Paused })
	time.Sleep(200 * time.Millisecond) // slots every 50ms pass while paused

	j := decode[jobsOut](t, cli(t, "jobs", "--config", cfg, "--json").out).Jobs[0]
	if !j.Paused || j.LastRun == nil || j.LastSlot == nil || !j.LastSlot.Equal(j.LastRun.Slot) {
		t.Fatalf("jobs = %+v: want paused, last_slot the last run's slot", j)
	}
	if j.PausedSlot == nil || !j.PausedSlot.After(*j.LastSlot) {
		t.Fatalf("paused_slot %v, want a slot after last_slot %v", j.PausedSlot, j.LastSlot)
	}
	// Slots keep falling due while paused: the table, read a moment
	// later, shows the JSON's paused slot or a later one.
	res := cli(t, "jobs", "--config", cfg)
	_, after, ok := strings.Cut(res.out, "paused, skipped ")
	var shown time.Time
	if f := strings.Fields(after); ok && len(f) > 0 {
		shown, _ = time.Parse("2006-01-02T15:04:05.000Z", f[0])
	}
	if res.code != exitOK || shown.IsZero() || shown.Before(j.PausedSlot.Truncate(time.Millisecond)) {
		t.Errorf("jobs table does not show the paused slot %v (or a later one) as paused:\n%s", j.PausedSlot, res.out)
	}
	for line := range strings.SplitSeq(res.out, "\n") {
		if strings.HasPrefix(line, "billing") && !strings.Contains(line, showTime(*j.LastSlot)) {
			t.Errorf("LAST SLOT is not the last run's slot %v: %q", j.LastSlot, line)
		}
	}
}

// TestCLI_O1_FirstContactErrors: a missing file is one error line; a
// refused password names the key and where its value came from, as the
// service does; without a config file the CLI says which namespace it read.
func TestCLI_O1_FirstContactErrors(t *testing.T) {
	srv := redistest.Start(t)
	t.Run("missing file is one line", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing.yaml")
		r := cli(t, "status", "-config", missing)
		if r.code != exitError || strings.Count(r.errOut, "\n") != 1 || !strings.Contains(r.errOut, `"`+missing+`"`) {
			t.Errorf("exit %d, stderr %q: want one line naming the file", r.code, r.errOut)
		}
	})
	t.Run("wrong password names the source", func(t *testing.T) {
		const password = "s3cret-Pa55word"
		admin := srv.NewClient()
		defer admin.Close()
		if err := admin.ConfigSet(t.Context(), "requirepass", password).Err(); err != nil {
			t.Fatal(err)
		}
		defer admin.ConfigSet(context.Background(), "requirepass", "")
		wrong := writeSpec(t, configSpec{addr: srv.Addr(), namespace: "shop", password: "not-" + password})
		r := cli(t, "status", "--config", wrong)
		if r.code != exitError || !strings.Contains(r.errOut, "locking.redis.password") || !strings.Contains(r.errOut, "(file "+wrong+")") {
			t.Errorf("file: exit %d, stderr %q: want the key and the file", r.code, r.errOut)
		}
		right := writeSpec(t, configSpec{addr: srv.Addr(), namespace: "shop", password: password})
		r = cliWith(t, stdio{environ: []string{"HOSTLOOM_LOCKING__REDIS__PASSWORD=not-" + password}}, "status", "--config", right)
		if r.code != exitError || !strings.Contains(r.errOut, "(env HOSTLOOM_LOCKING__REDIS__PASSWORD)") {
			t.Errorf("env: exit %d, stderr %q: want the variable", r.code, r.errOut)
		}
		for _, s := range []string{r.out, r.errOut} {
			if strings.Contains(s, password) {
				t.Errorf("password printed: %q", s)
			}
		}
	})
	t.Run("without a file it names the namespace", func(t *testing.T) {
		env := []string{"HOSTLOOM_LOCKING__PROVIDER=redis", "HOSTLOOM_LOCKING__REDIS__ADDRS=" + srv.Addr()}
		r := cliWith(t, stdio{environ: env}, "status")
		if r.code != exitOK || !strings.Contains(r.errOut, `namespace "" (locking.namespace: default)`) {
			t.Errorf("exit %d, stderr %q: want the namespace and its source", r.code, r.errOut)
		}
		r = cliWith(t, stdio{environ: append(env, "HOSTLOOM_LOCKING__NAMESPACE=shop")}, "status", "--json")
		if r.code != exitOK || !strings.Contains(r.errOut, `namespace "shop" (locking.namespace: env HOSTLOOM_LOCKING__NAMESPACE)`) ||
			decode[statusJSON](t, r.out).Store.Namespace != "shop" {
			t.Errorf("exit %d, stderr %q: want namespace shop from the variable", r.code, r.errOut)
		}
	})
}
