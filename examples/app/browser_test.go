package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/core/scheduling/slotstore"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// findChromium returns the browser the dashboard test drives: $CHROMIUM,
// else chromium (Debian), chromium-browser or google-chrome on PATH. It
// fails the test when none is found and CI is set (the browser test must
// not silently disappear from CI), and skips it otherwise.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium on PATH (nor $CHROMIUM), and CI is set: the dashboard's browser test must run in CI")
	}
	t.Skip("no chromium on PATH (set $CHROMIUM to run the browser test)")
	return ""
}

// screenshotDir is where the test writes its screenshots: docs/images,
// shown in the README.
const screenshotDir = "../../docs/images"

// TestBrowser_W3_DashboardOverRedis drives headless Chromium against two
// example processes over a real redis-server: the roles page shows the
// leader; an anonymous action and a forged cross-site post are refused;
// an operator pauses the invoices job with the button and the job store
// (which the hostloom CLI reads) and the next slot see it; SIGTERM to the
// leader makes the open page show the new leader without a reload.
func TestBrowser_W3_DashboardOverRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example binary and a browser")
	}
	chromium := findChromium(t)
	start := time.Now()
	srv := redistest.Start(t)
	bin := filepath.Join(t.TempDir(), "example")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const credential = "browser-test-credential"
	env := []string{
		"HOSTLOOM_LOCKING__PROVIDER=redis", "HOSTLOOM_LOCKING__REDIS__ADDRS=" + srv.Addr(),
		"HOSTLOOM_LEADERSHIP__LEASE=10s", "HOSTLOOM_LEADERSHIP__RENEW_INTERVAL=3s", "HOSTLOOM_LEADERSHIP__RETRY_INTERVAL=1s",
		"HOSTLOOM_DASHBOARD_CREDENTIAL=" + credential,
	}
	procs := []*proc{startProc(t, bin, "p1", env...), startProc(t, bin, "p2", env...)}
	var leader *proc
	eventually(t, 20*time.Second, "one leader of billing", func() (err error) {
		leader, err = oneLeader(procs, "billing")
		return err
	})
	follower := procs[0]
	if follower == leader {
		follower = procs[1]
	}
	ids := map[*proc]string{}
	for _, p := range procs {
		st, err := p.status()
		if err != nil {
			t.Fatal(err)
		}
		ids[p] = st["billing"].Identity
	}
	// The job store as the hostloom CLI reads it (jobs, history).
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	lock, err := locking.New(redislock.New(client), locking.Options{Namespace: "hostloom-example"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Close() })
	jobStatus := func() slotstore.JobStatus {
		st, err := lock.JobStatus(context.Background(), scheduling.JobKey("billing", "invoices"))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// The first run lands in the store before the page is read.
	eventually(t, 20*time.Second, "a run of invoices recorded", func() error {
		if jobStatus().Runs == 0 {
			return errors.New("no run yet")
		}
		return nil
	})

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1200, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	// The first Run starts the browser and binds its life to its context:
	// bctx, without a deadline; each step has its own.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, 40*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			loc, _ := chromedp.Run(bctx, chromedp.Location())
			body, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			t.Fatalf("%s: %v (page %s:\n%s)", what, err, loc, body)
		}
	}
	eval := func(what, expr string, opts ...chromedp.EvaluateOption) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr, opts...))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	shoot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(screenshotDir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return s
	}
	// showsLeader waits until the open page shows id as billing's leader.
	showsLeader := func(id string) {
		t.Helper()
		expr := fmt.Sprintf(`document.querySelector('#role-billing .leader')?.dataset.leader === %q`, id)
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			t.Fatalf("the page does not show %s leading billing: %v", id, err)
		}
	}
	base := follower.baseURL() + "/dashboard/"

	// The page shows the leader.
	do("open the roles page", chromedp.Navigate(base+"roles"))
	showsLeader(ids[leader])

	// An action without the credential is refused, and nothing is offered.
	do("open the jobs page", chromedp.Navigate(base+"jobs"), chromedp.WaitVisible(chromedp.CSS(`#job-billing-invoices`)))
	anon := eval("post anonymously", `fetch("action/pause", {method: "POST", body: new URLSearchParams({role: "billing", job: "invoices", note: "anonymous"})}).then(r => r.text().then(b => r.status + " " + b))`,
		chromedp.EvalAwaitPromise)
	if !strings.HasPrefix(anon, "403 ") || !strings.Contains(anon, "sign in") {
		t.Errorf("anonymous pause answered %.300q", anon)
	}
	if n := eval("count buttons", `String(document.querySelectorAll("button.pause").length)`); n != "0" {
		t.Errorf("an anonymous page offers %s pause buttons", n)
	}

	// An operator signs in.
	do("sign in", chromedp.Navigate(base+"login"),
		chromedp.SendKeys(chromedp.CSS(`#operator-name`), "ops-on-call"),
		chromedp.SendKeys(chromedp.CSS(`#credential`), credential),
		chromedp.Click(chromedp.CSS(`#sign-in`)),
		chromedp.WaitVisible(chromedp.CSS(`#operator`)))

	// A forged post from another origin, with the operator's cookie, is
	// refused.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%saction/pause">
<input name="role" value="billing"><input name="job" value="invoices"><input name="csrf" value="guessed"><input name="note" value="forged">
</form><script>document.getElementById("f").submit()</script>`, base)
	}))
	defer evil.Close()
	do("forged post", chromedp.Navigate(evil.URL), chromedp.WaitVisible(chromedp.CSS(`#answer`)))
	if got := text(`#answer`); !strings.Contains(got, "another site") {
		t.Errorf("forged post answered %q", got)
	}
	if jobStatus().Paused {
		t.Fatal("the forged post paused the job")
	}

	// Pausing through the button: the job store shows it paused, and the
	// next slot passes without a run.
	do("pause", chromedp.Navigate(base+"jobs"), chromedp.WaitVisible(chromedp.CSS(`#job-billing-invoices button.pause`)),
		chromedp.SendKeys(chromedp.CSS(`#job-billing-invoices input[name=note]`), "invoice vendor outage"),
		chromedp.Click(chromedp.CSS(`#job-billing-invoices button.pause`)),
		chromedp.WaitVisible(chromedp.CSS(`#answer`)))
	if got := text(`#answer`); !strings.Contains(got, "Paused job invoices of role billing") {
		t.Fatalf("pause answered %q", got)
	}
	if !jobStatus().Paused {
		t.Fatal("the job store does not show the job paused")
	}
	// A slot claimed before the pause landed may still be running: the
	// runs counted from here on are the ones the pause must prevent. (The
	// count was taken before the click at first, and a slot that began
	// while the browser was still loading the page counted against the
	// pause on a busy machine.)
	eventually(t, 20*time.Second, "the run under way at the pause to end", func() error {
		if jobStatus().Running {
			return errors.New("a run is under way")
		}
		return nil
	})
	before := jobStatus()
	paused := time.Now()
	// The answer (one level down, at action/pause) is styled and links back.
	if styled := eval("stylesheet", `String(document.styleSheets.length > 0 && document.styleSheets[0].cssRules.length > 0)`); styled != "true" {
		t.Error("the answer page has no stylesheet")
	}
	do("back", chromedp.Click(chromedp.CSS(`#answer a`)), chromedp.WaitVisible(chromedp.CSS(`#job-billing-invoices`)))
	eventually(t, 20*time.Second, "a slot passing while paused", func() error {
		if st := jobStatus(); !time.UnixMilli(st.Slot).After(paused) {
			return fmt.Errorf("latest slot %v", time.UnixMilli(st.Slot))
		}
		return nil
	})
	if after := jobStatus(); after.Runs != before.Runs {
		t.Errorf("runs went from %d to %d while paused", before.Runs, after.Runs)
	}
	do("jobs page", chromedp.Navigate(base+"jobs"), chromedp.WaitVisible(chromedp.CSS(`#job-billing-invoices`)))
	if got := text(`#job-billing-invoices`); !strings.Contains(got, "by ops-on-call") || !strings.Contains(got, "invoice vendor outage") {
		t.Errorf("jobs page after pause: %q", got)
	}
	shoot("dashboard-jobs.png")
	do("audit page", chromedp.Navigate(base+"audit"), chromedp.WaitVisible(chromedp.CSS(`#audit`)))
	if got := text(`#audit`); !strings.Contains(got, "ops-on-call") || !strings.Contains(got, "refused") {
		t.Errorf("audit page: %q", got)
	}
	shoot("dashboard-audit.png")

	// SIGTERM to the leader: the open page shows the new leader, without a
	// reload (a mark set on the page survives).
	do("open the roles page again", chromedp.Navigate(base+"roles"))
	showsLeader(ids[leader])
	eval("mark the page", `window.hostloomMark = "kept"`)
	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	showsLeader(ids[follower])
	if mark := eval("read the mark", `window.hostloomMark || "reloaded"`); mark != "kept" {
		t.Errorf("the page was reloaded (mark %q)", mark)
	}
	if got := text(`#role-billing`); !strings.Contains(got, "became leader") {
		t.Errorf("roles page after the handover: %q", got)
	}
	shoot("dashboard-roles.png")
	if err := leader.cmd.Wait(); err != nil {
		t.Errorf("the stopped leader exited with %v", err)
	}
	if err := follower.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := follower.cmd.Wait(); err != nil {
		t.Errorf("%s exited with %v", follower.name, err)
	}
	t.Logf("browser test ran in %v", time.Since(start).Round(time.Millisecond))
}
