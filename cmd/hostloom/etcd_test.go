package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
	"github.com/hostloom/hostloom/core/scheduling"
)

// etcd is the private three-member etcd cluster of the test run, started
// by the first test that needs it and stopped by TestMain; each test
// keeps its keys under a prefix of its own (locking.etcd.prefix).
var etcd struct {
	once    sync.Once
	cluster *etcdtest.Cluster
	err     error
	shared  etcdtest.Shared // NewPrefix only
}

func stopEtcd() {
	if etcd.cluster != nil {
		etcd.cluster.Stop()
	}
}

// etcdCluster returns the shared cluster's endpoints and a fresh key
// prefix. Without a server binary it skips t (fails it when
// etcdtest.Required).
func etcdCluster(t *testing.T) (endpoints []string, prefix string) {
	t.Helper()
	etcd.once.Do(func() { etcd.cluster, etcd.err = etcdtest.Launch(etcdtest.Options{}) })
	if etcd.err != nil {
		if etcdtest.Required() {
			t.Fatalf("etcd is required here (CI or HOSTLOOM_REQUIRE_ETCD=1) but did not start: %v", etcd.err)
		}
		t.Skipf("etcd did not start, skipping: %v", etcd.err)
	}
	return etcd.cluster.Endpoints(), etcd.shared.NewPrefix(t.Name())
}

// writeEtcdConfig writes an app.yaml with provider etcd, the endpoints
// and the prefix; extra lines go into locking.etcd.
func writeEtcdConfig(t *testing.T, endpoints []string, prefix, namespace string, extra ...string) string {
	t.Helper()
	q := make([]string, len(endpoints))
	for i, ep := range endpoints {
		q[i] = fmt.Sprintf("%q", ep)
	}
	etcdLines := ""
	for _, l := range extra {
		etcdLines += "\n    " + l
	}
	yaml := fmt.Sprintf(`locking:
  provider: etcd
  namespace: %s
  etcd:
    endpoints: [%s]
    prefix: %q
    dial_timeout: 2s%s
leadership:
  lease: 1s
  renew_interval: 300ms
  retry_interval: 500ms
`, namespace, strings.Join(q, ", "), prefix, etcdLines)
	path := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startEtcdReplica is startReplica over etcdlock: its own client.
func startEtcdReplica(t *testing.T, endpoints []string, prefix, namespace, role, identity string) *replica {
	t.Helper()
	c, err := etcdtest.NewClient(endpoints...)
	if err != nil {
		t.Fatal(err)
	}
	o := locking.DefaultOptions()
	o.Namespace = namespace
	lock, err := etcdlock.NewLock(c, etcdlock.Options{Prefix: prefix}, o)
	if err != nil {
		t.Fatal(err)
	}
	return startElector(t, lock, role, identity, func() { _ = c.Close() })
}

// TestCLI_N1_StatusOverEtcd: with provider etcd, status shows the leader,
// its fence (an etcd revision), TTL and the participants, and where it
// looked; another namespace under the same prefix is not shown.
func TestCLI_N1_StatusOverEtcd(t *testing.T) {
	eps, prefix := etcdCluster(t)
	a := startEtcdReplica(t, eps, prefix, "shop", "billing", "replica-a")
	b := startEtcdReplica(t, eps, prefix, "shop", "billing", "replica-b")
	startEtcdReplica(t, eps, prefix, "other", "billing", "elsewhere")
	lead := leaderOf(t, a, b)
	waitFor(t, "both billing replicas registered", func() bool {
		ps, err := a.elector.Participants(t.Context())
		return err == nil && len(ps) == 2
	})
	cfg := writeEtcdConfig(t, eps, prefix, "shop")
	r := cli(t, "status", "--config", cfg, "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	st := decode[statusJSON](t, r.out)
	if st.Store.Provider != "etcd" || st.Store.Namespace != "shop" || !slices.Equal(st.Store.Addrs, eps) || st.Store.Password {
		t.Errorf("store = %+v", st.Store)
	}
	if len(st.Roles) != 1 {
		t.Fatalf("roles = %+v, want billing only", st.Roles)
	}
	billing := st.Roles[0]
	if billing.Leader != lead.identity || billing.Fence == 0 || billing.Fence != lead.elector.Fence() || billing.TTLMillis <= 0 {
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
	r = cli(t, "status", "billing", "--config", cfg)
	if r.code != exitOK || !strings.Contains(r.out, lead.identity) {
		t.Errorf("table: exit %d\n%s", r.code, r.out)
	}
	if r := cli(t, "status", "nope", "--config", cfg); r.code != exitError || r.errOut != "hostloom: no such role \"nope\" in namespace \"shop\"\n" {
		t.Errorf("no such role: exit %d, stderr %q", r.code, r.errOut)
	}
}

// TestCLI_N1_ResignHandOverAndWatchOverEtcd: resign hands the role over
// through a resign request (a Watch on the role's keys), handover hands
// it to the named participant, and watch prints both acquisitions.
func TestCLI_N1_ResignHandOverAndWatchOverEtcd(t *testing.T) {
	eps, prefix := etcdCluster(t)
	cfg := writeEtcdConfig(t, eps, prefix, "shop")
	a := startEtcdReplica(t, eps, prefix, "shop", "billing", "replica-a")
	b := startEtcdReplica(t, eps, prefix, "shop", "billing", "replica-b")
	old := leaderOf(t, a, b)
	next := a
	if old == a {
		next = b
	}
	waitFor(t, "both billing replicas registered", func() bool {
		ps, err := a.elector.Participants(t.Context())
		return err == nil && len(ps) == 2
	})

	var out, errOut syncBuffer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
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
	h := decode[handoverJSON](t, r.out)
	if h.Previous != old.identity || h.Leader != next.identity || h.Fence <= oldFence {
		t.Errorf("resign = %+v, want %s → %s with a fence above %d", h, old.identity, next.identity, oldFence)
	}
	t.Logf("resign → new leader over etcd: %.2f ms (as the CLI observed it)", h.LatencyMillis)
	acquiredBy := func(identity string) func() bool {
		return func() bool {
			for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
				if line != "" && decode[watchJSON](t, line).Event == watchAcquired && strings.Contains(line, identity) {
					return true
				}
			}
			return false
		}
	}
	waitFor(t, "watch prints the acquisition by "+next.identity, acquiredBy(next.identity))
	waitFor(t, "the new leader's participants are both replicas", func() bool {
		ps, err := next.elector.Participants(t.Context())
		return err == nil && len(ps) == 2
	})

	if r := cli(t, "handover", "billing", "--to", "nobody", "--config", cfg); r.code != exitError || !strings.Contains(r.errOut, `"nobody" is not a participant`) {
		t.Errorf("unknown identity: exit %d, err %q", r.code, r.errOut)
	}
	r = cli(t, "handover", "billing", "--to", old.identity, "--config", cfg, "--json")
	if r.code != exitOK {
		t.Fatalf("handover exit %d: %s", r.code, r.errOut)
	}
	h2 := decode[handoverJSON](t, r.out)
	if h2.Previous != next.identity || h2.Leader != old.identity || h2.Fence <= h.Fence {
		t.Errorf("handover = %+v, want %s → %s with a fence above %d", h2, next.identity, old.identity, h.Fence)
	}
	waitFor(t, "watch prints the acquisition by "+old.identity+" again", func() bool {
		n := 0
		for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
			if line != "" && decode[watchJSON](t, line).Event == watchAcquired && strings.Contains(line, old.identity) {
				n++
			}
		}
		return n >= 2
	})
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("watch exit %d, stderr %s", code, errOut.String())
	}
	t.Logf("watch:\n%s", out.String())
}

// TestCLI_N1_ReleaseForceOverEtcd: release --force deletes the lease over
// etcd; the next term's fence is greater, and watch tells the delete from
// a release (the marker is a note under the prefix).
func TestCLI_N1_ReleaseForceOverEtcd(t *testing.T) {
	eps, prefix := etcdCluster(t)
	cfg := writeEtcdConfig(t, eps, prefix, "shop")
	a := startEtcdReplica(t, eps, prefix, "shop", "billing", "replica-a")
	b := startEtcdReplica(t, eps, prefix, "shop", "billing", "replica-b")
	old := leaderOf(t, a, b)
	fence := old.elector.Fence()

	var out, errOut syncBuffer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"watch", "--config", cfg, "--interval", "5s", "--json"}, stdio{in: strings.NewReader(""), out: &out, err: &errOut})
	}()
	waitFor(t, "watch prints the current leader", func() bool { return strings.Contains(out.String(), old.identity) })

	r := cli(t, "release", "--force", "--yes", "billing", "--config", cfg, "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	h := decode[handoverJSON](t, r.out)
	if h.Previous != old.identity || h.PreviousFence != fence || h.Leader == "" || h.Fence <= h.PreviousFence {
		t.Errorf("release = %+v, want %s (fence %d) followed by a greater fence", h, old.identity, fence)
	}
	waitFor(t, "watch prints the delete of "+old.identity+"'s lease", func() bool {
		for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
			if w := decode[watchJSON](t, line); w.Event == watchDeleted && w.Leader == old.identity && w.Fence == fence {
				return true
			}
		}
		return false
	})
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("watch exit %d, stderr %s", code, errOut.String())
	}
	t.Logf("watch:\n%s", out.String())
}

// TestCLI_N1_JobsOverEtcd: jobs, history, pause and resume over the etcd
// job store.
func TestCLI_N1_JobsOverEtcd(t *testing.T) {
	eps, prefix := etcdCluster(t)
	cfg := writeEtcdConfig(t, eps, prefix, "shop")
	r := startEtcdReplica(t, eps, prefix, "shop", "billing", "replica-a")
	checkJobsCLI(t, r, cfg)
}

// TestCLI_N1_EtcdBadInput: endpoints nobody serves are "unreachable",
// naming the endpoints and the bound; a prefix etcdlock refuses is an
// error naming the key, the value and its source.
func TestCLI_N1_EtcdBadInput(t *testing.T) {
	r := cli(t, "status", "--config", writeEtcdConfig(t, []string{"127.0.0.1:1"}, "p/", "shop"), "--timeout", "300ms")
	if r.code != exitError || !strings.HasPrefix(r.errOut, "hostloom: etcd 127.0.0.1:1 unreachable: ") || strings.Count(r.errOut, "\n") != 1 {
		t.Errorf("unreachable: exit %d, stderr %q", r.code, r.errOut)
	}
	bad := writeEtcdConfig(t, []string{"127.0.0.1:1"}, "app\x01/", "shop")
	r = cli(t, "status", "--config", bad)
	for _, w := range []string{"locking.etcd.prefix", `"app\x01/"`, "file " + bad} {
		if r.code != exitError || !strings.Contains(r.errOut, w) {
			t.Errorf("bad prefix: exit %d, stderr %q lacks %q", r.code, r.errOut, w)
		}
	}
}

// TestCLI_W1_N1_DashboardOverEtcd: hostloom dashboard over etcd serves the
// roles page with the leader and the jobs page with the job etcd keeps
// records for.
func TestCLI_W1_N1_DashboardOverEtcd(t *testing.T) {
	eps, prefix := etcdCluster(t)
	cfg := writeEtcdConfig(t, eps, prefix, "shop")
	r := startEtcdReplica(t, eps, prefix, "shop", "billing", "replica-a")
	leaderOf(t, r)
	startScheduler(t, r)
	waitFor(t, "a run recorded", func() bool {
		st, err := r.lock.JobStatus(t.Context(), scheduling.JobKey("billing", "invoices"))
		return err == nil && st.Runs >= 1
	})

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"dashboard", "--config", cfg, "--listen", "127.0.0.1:0"}, stdio{in: strings.NewReader(""), out: out, err: errOut})
	}()
	addrRE := regexp.MustCompile(`at (http://[^/]+/) \(read-only`)
	var base string
	waitFor(t, "the dashboard listening", func() bool {
		m := addrRE.FindStringSubmatch(out.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, body)
		}
		return string(body)
	}
	if page := get("roles"); !strings.Contains(page, `data-leader="replica-a"`) {
		t.Errorf("roles page lacks the leader:\n%s", page)
	}
	if page := get("jobs"); !strings.Contains(page, "invoices") {
		t.Errorf("jobs page lacks the invoices job:\n%s", page)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut.String())
	}
}

// TestCLI_N1_EtcdCredentials: over a cluster with authentication on, a
// wrong password is an error naming locking.etcd.password and where it
// came from, never the password; the right one reads the namespace.
func TestCLI_N1_EtcdCredentials(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{Members: 1}) // skips without a server binary
	const password = "etcd-s3cret"
	if err := c.EnableAuth(t.Context(), "svc", password, "app/"); err != nil {
		t.Fatal(err)
	}
	cfg := writeEtcdConfig(t, c.Endpoints(), "app/", "shop", "username: svc")
	wrong := cliWith(t, stdio{environ: []string{"HOSTLOOM_LOCKING__ETCD__PASSWORD=not-" + password}}, "status", "--config", cfg)
	for _, w := range []string{"locking.etcd.password", `user "svc"`, "env HOSTLOOM_LOCKING__ETCD__PASSWORD"} {
		if wrong.code != exitError || !strings.Contains(wrong.errOut, w) {
			t.Errorf("wrong password: exit %d, stderr %q lacks %q", wrong.code, wrong.errOut, w)
		}
	}
	right := cliWith(t, stdio{environ: []string{"HOSTLOOM_LOCKING__ETCD__PASSWORD=" + password}}, "status", "--config", cfg, "--json")
	if right.code != exitOK {
		t.Fatalf("right password: exit %d, %q", right.code, right.errOut)
	}
	if st := decode[statusJSON](t, right.out); st.Store.Username != "svc" || !st.Store.Password {
		t.Errorf("store = %+v", st.Store)
	}
	for _, r := range []result{wrong, right} {
		if strings.Contains(r.out+r.errOut, password) {
			t.Errorf("the password shows:\n%s\n%s", r.out, r.errOut)
		}
	}
}
