//go:build unix

package chaos

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFaultOrder_SeededRoundsCoverEveryKind(t *testing.T) {
	draw := func(seed uint64, n int) []FaultKind {
		o := &faultOrder{rng: rand.New(rand.NewPCG(seed, 1)), kinds: StandaloneFaults}
		out := make([]FaultKind, n)
		for i := range out {
			out[i] = o.next()
		}
		return out
	}
	k := len(StandaloneFaults)
	a, b := draw(42, 3*k), draw(42, 3*k)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different schedules:\n%v\n%v", a, b)
	}
	if slices.Equal(a, draw(43, 3*k)) {
		t.Errorf("seeds 42 and 43 drew the same schedule %v", a)
	}
	for r := range 3 {
		round := slices.Clone(a[r*k : (r+1)*k])
		slices.Sort(round)
		want := slices.Clone(StandaloneFaults)
		slices.Sort(want)
		if !slices.Equal(round, want) {
			t.Errorf("round %d = %v, want every kind once", r, a[r*k:(r+1)*k])
		}
	}
}

func TestReplicaOf(t *testing.T) {
	tests := []struct {
		id   string
		want int
		ok   bool
	}{
		{"r0.1", 0, true}, {"r12.3", 12, true}, {"r3", 0, false}, {"x1.1", 0, false}, {"r.1", 0, false}, {"", 0, false},
	}
	for _, tt := range tests {
		got, ok := replicaOf(tt.id)
		if got != tt.want || ok != tt.ok {
			t.Errorf("replicaOf(%q) = %d, %v; want %d, %v", tt.id, got, ok, tt.want, tt.ok)
		}
	}
}

func TestRecheck_UsesSavedLimitsOrOverride(t *testing.T) {
	dir := t.TempDir()
	lim := Limits{Lease: time.Second, RetryInterval: 250 * time.Millisecond, ExpiryRace: 12 * time.Millisecond}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(writeJSON(filepath.Join(dir, "run.json"), runFile{Roles: []string{"a"}, From: at(0), To: at(3000), Limits: lim}))
	must(writeJSON(filepath.Join(dir, "faults.json"), []Fault{}))
	must(writeJSON(filepath.Join(dir, "incarnations.json"), []Incarnation{}))
	var lines []byte
	for _, r := range append([]Record{work("r0.1", "a", 1, 0, 1002)}, cont("r1.1", "a", 1, 1000, 3000)...) {
		b, err := json.Marshal(r)
		must(err)
		lines = append(append(lines, b...), '\n')
	}
	must(os.WriteFile(filepath.Join(dir, "r0.jsonl"), lines, 0o600))

	rep, err := Recheck(dir, 0)
	must(err)
	if !rep.OK() || len(rep.LateExpiry) != 1 {
		t.Fatalf("saved limits: %s", rep.Summary())
	}
	rep, err = Recheck(dir, -1)
	must(err)
	if rep.OK() || len(rep.Overlaps) != 1 {
		t.Fatalf("strict recheck passed:\n%s", rep.Summary())
	}
	if _, err := Recheck(t.TempDir(), 0); err == nil {
		t.Fatal("Recheck of an empty directory succeeded")
	}
}

// TestCheckFaultKinds_Q2_LagKillMasterIsOptInPerBackend: the lag-and-kill
// faults are accepted by their own backend only, never drawn by default,
// and their overlaps count as failovers, not as restarts.
func TestCheckFaultKinds_Q2_LagKillMasterIsOptInPerBackend(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		kind FaultKind
		ok   bool
	}{
		{Config{Cluster: true}, FaultClusterLagKillMaster, true},
		{Config{Sentinel: true}, FaultSentinelLagKillMaster, true},
		{Config{Sentinel: true}, FaultClusterLagKillMaster, false},
		{Config{Cluster: true}, FaultSentinelLagKillMaster, false},
		{Config{}, FaultClusterLagKillMaster, false},
	} {
		c.cfg.Faults = []FaultKind{c.kind}
		err := CheckFaultKinds(c.cfg)
		if (err == nil) != c.ok {
			t.Errorf("CheckFaultKinds(cluster %v, sentinel %v, %s) = %v, want ok %v", c.cfg.Cluster, c.cfg.Sentinel, c.kind, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), string(c.kind)) {
			t.Errorf("error %q does not name %s", err, c.kind)
		}
	}
	if slices.Contains(ClusterFaults, FaultClusterLagKillMaster) || slices.Contains(SentinelFaults, FaultSentinelLagKillMaster) {
		t.Error("a lag-and-kill fault is drawn by default")
	}
	for _, k := range []FaultKind{FaultClusterLagKillMaster, FaultSentinelLagKillMaster} {
		if !isFailover(k) {
			t.Errorf("%s is not counted as a failover", k)
		}
	}
	s := &FailoverStats{Backend: "cluster"}
	s.fill(&Report{LostStateOverlaps: []Overlap{{Fault: "#3 " + string(FaultClusterLagKillMaster), Length: time.Millisecond}}})
	if s.Overlaps != 1 || s.FaultsWithOverlap != 1 || s.LongestOverlap != time.Millisecond {
		t.Errorf("FailoverStats after a lag-and-kill overlap = %+v", s)
	}
}

// TestLagStop_Q2_ReplicaMissesRenewalsOfRunningLeases: the Cluster
// lag-and-kill fault keeps the replica stopped less than a lease (the
// leases it missed still run on the clients when it is promoted) and at
// least one renew interval (it missed a renewal of every term).
func TestLagStop_Q2_ReplicaMissesRenewalsOfRunningLeases(t *testing.T) {
	for _, c := range []struct {
		lease, renew, want time.Duration
	}{
		{2 * time.Second, 500 * time.Millisecond, 1750 * time.Millisecond},
		{15 * time.Second, 5 * time.Second, 12500 * time.Millisecond},
		{time.Second, 900 * time.Millisecond, 900 * time.Millisecond},
	} {
		got := lagStop(Config{Lease: c.lease, RenewInterval: c.renew})
		if got != c.want {
			t.Errorf("lagStop(lease %v, renew %v) = %v, want %v", c.lease, c.renew, got, c.want)
		}
		if got >= c.lease || got < c.renew {
			t.Errorf("lagStop(lease %v, renew %v) = %v, not in [renew, lease)", c.lease, c.renew, got)
		}
	}
}
