package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

// work is a work record of identity id for role over [fromMs, toMs].
func work(id, role string, term uint64, fromMs, toMs int) Record {
	s, e := at(fromMs).UnixNano(), at(toMs).UnixNano()
	return Record{Kind: KindWork, Identity: id, Role: role, Term: term, Start: s, End: e, MonoStart: s - base.UnixNano(), MonoEnd: e - base.UnixNano()}
}

// cont is a run of back-to-back 50 ms slices over [fromMs, toMs].
func cont(id, role string, term uint64, fromMs, toMs int) []Record {
	var out []Record
	for t := fromMs; t < toMs; t += 50 {
		out = append(out, work(id, role, term, t, min(t+50, toMs)))
	}
	return out
}

var testLimits = Limits{Lease: time.Second, RetryInterval: 250 * time.Millisecond}

func stoppedOK(ids ...string) ([]Incarnation, []Record) {
	var incs []Incarnation
	var exits []Record
	for _, id := range ids {
		incs = append(incs, Incarnation{Identity: id, Stopped: true, OK: true, Exit: "exit status 0"})
		exits = append(exits, Record{Kind: KindExit, Identity: id, Goroutines: 3, Baseline: 3})
	}
	return incs, exits
}

func history(recs ...[]Record) History {
	incs, exits := stoppedOK("r0.1", "r1.1", "r2.1")
	var all []Record
	for _, r := range recs {
		all = append(all, r...)
	}
	return History{Roles: []string{"a"}, Records: append(all, exits...), Incarnations: incs, From: at(0), To: at(3000)}
}

func TestCheck_CleanHandoverPasses(t *testing.T) {
	h := history(cont("r0.1", "a", 1, 0, 1000), cont("r1.1", "a", 1, 1200, 3000))
	r := Check(h, testLimits)
	if !r.OK() {
		t.Fatalf("clean history failed:\n%s", r.Summary())
	}
	if r.Handovers != 1 {
		t.Errorf("handovers = %d, want 1", r.Handovers)
	}
	if got := r.MaxGap.To.Sub(r.MaxGap.From); got != 200*time.Millisecond {
		t.Errorf("max gap = %v, want 200ms", got)
	}
	if r.WorkRecords != 20+36 {
		t.Errorf("work records = %d, want 56", r.WorkRecords)
	}
}

func TestCheck_OverlapFails(t *testing.T) {
	h := history(cont("r0.1", "a", 1, 0, 1000), cont("r1.1", "a", 1, 980, 3000))
	r := Check(h, testLimits)
	if r.OK() || len(r.Overlaps) != 1 {
		t.Fatalf("overlap not reported: %d overlaps\n%s", len(r.Overlaps), r.Summary())
	}
	o := r.Overlaps[0]
	if o.Length != 20*time.Millisecond || o.A.Identity != "r0.1" || o.B.Identity != "r1.1" {
		t.Errorf("overlap = %s, want r0.1 then r1.1 for 20ms", o)
	}
	if o.Stall != 50*time.Millisecond {
		t.Errorf("stall evidence = %v, want the 50ms slice length", o.Stall)
	}
	if !strings.Contains(r.Summary(), "FAIL") {
		t.Errorf("summary does not say FAIL:\n%s", r.Summary())
	}
}

func TestCheck_OverlapOfOneNanosecondFails(t *testing.T) {
	a := work("r0.1", "a", 1, 0, 1000)
	b := work("r1.1", "a", 1, 1000, 3000)
	b.Start-- // starts one nanosecond before a ends
	r := Check(history([]Record{a, b}), testLimits)
	if len(r.Overlaps) != 1 || r.Overlaps[0].Length != time.Nanosecond {
		t.Fatalf("1ns overlap: got %v\n%s", r.Overlaps, r.Summary())
	}
}

func TestCheck_DifferentRolesMayOverlap(t *testing.T) {
	h := history(cont("r0.1", "a", 1, 0, 3000), cont("r1.1", "b", 1, 0, 3000))
	h.Roles = []string{"a", "b"}
	if r := Check(h, testLimits); !r.OK() {
		t.Fatalf("two roles led by two replicas failed:\n%s", r.Summary())
	}
}

func TestCheck_ThreeWayOverlapReportsEveryPair(t *testing.T) {
	h := history([]Record{work("r0.1", "a", 1, 0, 3000), work("r1.1", "a", 1, 100, 200), work("r2.1", "a", 1, 150, 300)})
	r := Check(h, testLimits)
	if len(r.Overlaps) != 3 {
		t.Fatalf("overlaps = %d, want 3 (every pair)\n%s", len(r.Overlaps), r.Summary())
	}
}

// pause is a SIGSTOP of r0.1 from stopMs to contMs.
func pause(stopMs, contMs int) Fault {
	return Fault{Seq: 1, Kind: FaultPause, Target: 0, Identity: "r0.1", Start: at(stopMs), Heal: at(contMs)}
}

func TestCheck_PausedWindowWithinLeaseIsReportedSeparately(t *testing.T) {
	// r0.1 is stopped at 500 during a slice, resumes at 2000 and finishes
	// that slice 30 ms later, while r1.1 leads since 1600.
	recs := append(cont("r0.1", "a", 1, 0, 500), work("r0.1", "a", 1, 500, 2030))
	h := history(recs, cont("r1.1", "a", 1, 1600, 3000))
	h.Faults = []Fault{pause(500, 2000)}
	r := Check(h, testLimits)
	if !r.OK() {
		t.Fatalf("paused window within the lease failed:\n%s", r.Summary())
	}
	if len(r.PausedWindows) != 1 || r.MaxPausedWindow != 30*time.Millisecond {
		t.Fatalf("paused windows = %v, max %v; want one of 30ms", r.PausedWindows, r.MaxPausedWindow)
	}
	// The pause itself is leaderless: 500..1600 = 1.1s, within 1s+250ms+100ms.
	if got := r.MaxGap.To.Sub(r.MaxGap.From); got != 1100*time.Millisecond {
		t.Errorf("max gap = %v, want 1.1s (a paused replica does not lead)", got)
	}
}

func TestCheck_PausedWindowBeyondLeaseFails(t *testing.T) {
	// After resuming at 2000, r0.1 keeps working until 3000: 1s+ past resume.
	recs := append(cont("r0.1", "a", 1, 0, 500), work("r0.1", "a", 1, 500, 2030), work("r0.1", "a", 1, 2030, 3100))
	h := history(recs, cont("r1.1", "a", 1, 1600, 3000))
	h.Faults = []Fault{pause(500, 2000)}
	r := Check(h, testLimits)
	if r.OK() {
		t.Fatalf("paused window of 1.1s passed with a 1s lease:\n%s", r.Summary())
	}
	if r.MaxPausedWindow != 1100*time.Millisecond {
		t.Errorf("max paused window = %v, want 1.1s", r.MaxPausedWindow)
	}
}

func TestCheck_PausedWindowCountsFromTheLatestPause(t *testing.T) {
	// r0.1 is paused twice: from 100 to 700, then from 2000 to 3500
	// during a slice it finishes 30 ms after resuming, while r1.1 leads
	// since 3200. Its tenure began at 800, within a lease of the first
	// pause's end, but the second pause is what it slept through: the
	// window counts from 3500, not from 700.
	recs := append(cont("r0.1", "a", 1, 800, 2000), work("r0.1", "a", 1, 2000, 3530))
	h := history(cont("r1.1", "a", 1, 0, 100), cont("r2.1", "a", 1, 150, 800), recs, cont("r1.1", "a", 2, 3200, 4000))
	h.To = at(4000)
	first, second := pause(100, 700), pause(2000, 3500)
	second.Seq = 2
	h.Faults = []Fault{first, second}
	r := Check(h, testLimits)
	if !r.OK() {
		t.Fatalf("a window of 30ms after the latest pause failed:\n%s", r.Summary())
	}
	if len(r.PausedWindows) != 1 || r.MaxPausedWindow != 30*time.Millisecond || !strings.Contains(r.PausedWindows[0].Fault, "#2") {
		t.Fatalf("paused windows = %v, max %v; want one of 30ms after fault #2", r.PausedWindows, r.MaxPausedWindow)
	}
}

func TestCheck_PauseOfAnotherReplicaDoesNotExcuseOverlap(t *testing.T) {
	h := history(cont("r1.1", "a", 1, 0, 1000), cont("r2.1", "a", 1, 900, 3000))
	h.Faults = []Fault{pause(500, 2000)} // r0.1 paused, not involved
	if r := Check(h, testLimits); len(r.Overlaps) == 0 {
		t.Fatalf("overlap excused by an unrelated pause:\n%s", r.Summary())
	}
}

func restart(startMs, healMs int) Fault {
	return Fault{Seq: 1, Kind: FaultRedisRestart, Target: -1, Start: at(startMs), Heal: at(healMs), LostState: true, Unavailable: true}
}

func TestCheck_LostStateOverlapWithinLeaseIsReportedSeparately(t *testing.T) {
	// Redis restarts empty at 1000-1050; r1.1 acquires at once while r0.1
	// works until its next renewal is refused at 1250.
	h := history(cont("r0.1", "a", 1, 0, 1250), cont("r1.1", "a", 1, 1100, 3000))
	h.Faults = []Fault{restart(1000, 1050)}
	r := Check(h, testLimits)
	if !r.OK() {
		t.Fatalf("lost-state overlap within the bound failed:\n%s", r.Summary())
	}
	if len(r.LostStateOverlaps) != 1 || r.LostStateOverlaps[0].Window != 200*time.Millisecond {
		t.Fatalf("lost-state overlaps = %v, want one ending 200ms after heal", r.LostStateOverlaps)
	}
}

func TestCheck_Q1_OverlapLongAfterAResumeIsNotThePauses(t *testing.T) {
	// r0.1 is paused from 500 to 2000, takes the role 10 ms after its
	// resume and renews it; Redis restarts empty at 4500-4550, r1.1
	// acquires at 4600 and r0.1 learns of the loss at 4630. The overlap
	// begins 2.6s after the resume: the restart's (a lost-state overlap
	// 80 ms after the heal), not a paused window of 2.63s.
	h := history(cont("r1.1", "a", 1, 0, 2000), cont("r0.1", "a", 1, 2010, 4630), cont("r1.1", "a", 2, 4600, 6000))
	h.To = at(6000)
	h.Faults = []Fault{pause(500, 2000), {Seq: 2, Kind: FaultRedisRestart, Target: -1, Start: at(4500), Heal: at(4550), LostState: true, Unavailable: true}}
	if r := Check(h, testLimits); !r.OK() || len(r.PausedWindows) != 0 || len(r.LostStateOverlaps) != 1 || r.LostStateOverlaps[0].Window != 80*time.Millisecond {
		t.Fatalf("a restart's overlap 2.6s after a pause: want it passed as one lost-state overlap ending 80ms after the heal, not a paused window:\n%s", r.Summary())
	}
}

func TestCheck_LostStateOverlapBeyondLeaseFails(t *testing.T) {
	h := history(cont("r0.1", "a", 1, 0, 2500), cont("r1.1", "a", 1, 1100, 3000))
	h.Faults = []Fault{restart(1000, 1050)}
	if r := Check(h, testLimits); r.OK() {
		t.Fatalf("old leader worked 1.45s past the restart and passed:\n%s", r.Summary())
	}
}

func TestCheck_SlowRecoveryFails(t *testing.T) {
	// 1.5s leaderless > 1s + 250ms + 100ms.
	h := history(cont("r0.1", "a", 1, 0, 1000), cont("r1.1", "a", 1, 2500, 3000))
	r := Check(h, testLimits)
	if r.OK() || len(r.SlowRecovery) != 1 {
		t.Fatalf("1.5s leaderless passed:\n%s", r.Summary())
	}
	if r.SlowRecovery[0].Counted != 1500*time.Millisecond {
		t.Errorf("counted = %v, want 1.5s", r.SlowRecovery[0].Counted)
	}
}

func TestCheck_SlowRecoveryNamesTheFaultOfThePreviousLeader(t *testing.T) {
	// r0.1's link is reset from 800; its term ends at 1000 and the role
	// stays leaderless for 1.5s: still a failure, with the evidence.
	h := history(cont("r0.1", "a", 1, 0, 1000), cont("r1.1", "a", 1, 2500, 3000))
	h.Faults = []Fault{{Seq: 4, Kind: FaultReset, Target: 0, Identity: "r0.1", Start: at(800), Heal: at(2800)}}
	r := Check(h, testLimits)
	if r.OK() || len(r.SlowRecovery) != 1 {
		t.Fatalf("1.5s leaderless passed:\n%s", r.Summary())
	}
	if want := "bound 1.35s, after r0.1's term ended during fault #4 reset"; !strings.Contains(r.SlowRecovery[0].String(), want) {
		t.Errorf("gap %s does not say %q", r.SlowRecovery[0], want)
	}
}

func TestCheck_DelayedLinkAddsItsDelayToTheBound(t *testing.T) {
	// r0.1's link is delayed 460ms from 800; its term ends at 1000. Its
	// last renewals land up to 460ms late, so the bound is 1.35s + 460ms.
	delayed := []Fault{{Seq: 4, Kind: FaultDelay, Target: 0, Identity: "r0.1", Start: at(800), Heal: at(2800), Delay: 460 * time.Millisecond, Detail: "delay 460ms"}}
	h := history(cont("r0.1", "a", 1, 0, 1000), cont("r1.1", "a", 1, 2500, 3000))
	h.Faults = delayed
	if r := Check(h, testLimits); !r.OK() || r.MaxCountedGap.Bound != 1810*time.Millisecond {
		t.Fatalf("1.5s leaderless after a 460ms delay failed (bound %v):\n%s", r.MaxCountedGap.Bound, r.Summary())
	}
	// No further: 1.9s leaderless is slow even after the delay.
	h = history(cont("r0.1", "a", 1, 0, 1000), cont("r1.1", "a", 1, 2900, 3000))
	h.Faults = delayed
	r := Check(h, testLimits)
	if r.OK() || len(r.SlowRecovery) != 1 {
		t.Fatalf("1.9s leaderless after a 460ms delay passed:\n%s", r.Summary())
	}
	if want := "bound 1.81s, after r0.1's term ended during fault #4 delay (delay 460ms)"; !strings.Contains(r.SlowRecovery[0].String(), want) {
		t.Errorf("gap %s does not say %q", r.SlowRecovery[0], want)
	}
	// A delay on another replica's link adds nothing.
	h = history(cont("r0.1", "a", 1, 0, 1000), cont("r1.1", "a", 1, 2500, 3000))
	h.Faults = []Fault{{Seq: 4, Kind: FaultDelay, Target: 2, Identity: "r2.1", Start: at(800), Heal: at(2800), Delay: 460 * time.Millisecond}}
	if r := Check(h, testLimits); r.OK() {
		t.Fatalf("a delay on a bystander's link excused 1.5s leaderless:\n%s", r.Summary())
	}
}

func TestCheck_RecoveryBoundIsInclusive(t *testing.T) {
	h := history(cont("r0.1", "a", 1, 0, 1000), cont("r1.1", "a", 1, 2350, 3000))
	if r := Check(h, testLimits); !r.OK() {
		t.Fatalf("gap of exactly the bound failed:\n%s", r.Summary())
	}
}

func TestCheck_OutageGapCountsFromHeal(t *testing.T) {
	// Redis down 800..2600; r1.1 leads 200ms after it is back.
	h := history(cont("r0.1", "a", 1, 0, 1000), cont("r1.1", "a", 1, 2800, 3000))
	h.Faults = []Fault{{Seq: 1, Kind: FaultRedisDown, Target: -1, Start: at(800), Heal: at(2600), LostState: true, Unavailable: true}}
	r := Check(h, testLimits)
	if !r.OK() {
		t.Fatalf("recovery 200ms after heal failed:\n%s", r.Summary())
	}
	if r.MaxCountedGap.Counted != 200*time.Millisecond || r.MaxGap.To.Sub(r.MaxGap.From) != 1800*time.Millisecond {
		t.Errorf("gaps: counted %v (want 200ms), raw %v (want 1.8s)", r.MaxCountedGap.Counted, r.MaxGap.To.Sub(r.MaxGap.From))
	}
}

func TestCheck_RoleNeverLedFails(t *testing.T) {
	h := history(cont("r0.1", "a", 1, 0, 3000))
	h.Roles = []string{"a", "b"}
	r := Check(h, testLimits)
	if len(r.SlowRecovery) != 1 || r.SlowRecovery[0].Role != "b" {
		t.Fatalf("role b never led, slow recoveries = %v", r.SlowRecovery)
	}
}

func TestCheck_ProcessOutcomes(t *testing.T) {
	tests := []struct {
		name  string
		inc   Incarnation
		exit  *Record
		crash bool
		leak  bool
	}{
		{"killed by the harness", Incarnation{Identity: "x", Killed: true, Exit: "signal: killed"}, nil, false, false},
		{"clean stop", Incarnation{Identity: "x", Stopped: true, OK: true}, &Record{Kind: KindExit, Identity: "x", Goroutines: 4, Baseline: 4}, false, false},
		{"exited on its own", Incarnation{Identity: "x", OK: true, Exit: "exit status 0"}, nil, true, false},
		{"panicked", Incarnation{Identity: "x", Exit: "exit status 2"}, nil, true, false},
		{"failed to stop", Incarnation{Identity: "x", Stopped: true, Exit: "exit status 1"}, nil, true, false},
		{"leaked goroutines", Incarnation{Identity: "x", Stopped: true, OK: true}, &Record{Kind: KindExit, Identity: "x", Goroutines: 9, Baseline: 4, Leaked: "goroutine 7 [select]"}, false, true},
		{"no exit record", Incarnation{Identity: "x", Stopped: true, OK: true}, nil, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := History{Incarnations: []Incarnation{tt.inc}}
			if tt.exit != nil {
				h.Records = []Record{*tt.exit}
			}
			r := Check(h, testLimits)
			if (len(r.Crashes) > 0) != tt.crash || (len(r.Leaks) > 0) != tt.leak {
				t.Fatalf("crashes %v leaks %v; want crash=%v leak=%v", r.Crashes, r.Leaks, tt.crash, tt.leak)
			}
			if r.OK() == (tt.crash || tt.leak) {
				t.Errorf("OK() = %v with problems %v", r.OK(), r.Problems())
			}
		})
	}
}

func TestCheck_WallClockJumpFails(t *testing.T) {
	rec := work("r0.1", "a", 1, 0, 3000)
	rec.MonoEnd -= int64(50 * time.Millisecond)
	r := Check(history([]Record{rec}), testLimits)
	if len(r.ClockIssues) != 1 || r.OK() {
		t.Fatalf("50ms wall/monotonic disagreement not reported:\n%s", r.Summary())
	}
}

func TestReadRecords_TornLastLineIgnored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r0.jsonl")
	data := `{"kind":"start","replica":0,"id":"r0.1","pid":7}` + "\n" +
		`{"kind":"work","id":"r0.1","role":"a","term":1,"start":10,"end":20}` + "\n" +
		`{"kind":"work","id":"r0.1","ro`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Role != "a" || recs[1].End != 20 || recs[0].PID != 7 {
		t.Fatalf("records = %+v", recs)
	}
}

func TestReadRecords_MalformedLineNamesFileAndLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r1.jsonl")
	if err := os.WriteFile(path, []byte("{}\nnot json\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadRecords(path)
	if err == nil || !strings.Contains(err.Error(), "r1.jsonl line 2") {
		t.Fatalf("err = %v, want one naming r1.jsonl line 2", err)
	}
}

func TestCheck_LateExpiryWithinToleranceIsReportedSeparately(t *testing.T) {
	// r0.1 notices 2 ms late that r1.1 took over at 1000.
	a := work("r0.1", "a", 1, 0, 1002)
	h := history([]Record{a}, cont("r1.1", "a", 1, 1000, 3000))
	lim := testLimits
	lim.ExpiryRace = DefaultExpiryRace(lim.Lease)
	if lim.ExpiryRace != 12*time.Millisecond {
		t.Fatalf("DefaultExpiryRace(1s) = %v, want 12ms", lim.ExpiryRace)
	}
	r := Check(h, lim)
	if !r.OK() || len(r.LateExpiry) != 1 || r.MaxLateExpiry != 2*time.Millisecond {
		t.Fatalf("2ms late expiry with a 12ms tolerance: late %v\n%s", r.LateExpiry, r.Summary())
	}
	// Strict: the same history fails.
	if r := Check(h, testLimits); r.OK() || len(r.Overlaps) != 1 {
		t.Fatalf("2ms overlap passed a strict check:\n%s", r.Summary())
	}
}

func TestCheck_LateExpiryBeyondToleranceFails(t *testing.T) {
	h := history([]Record{work("r0.1", "a", 1, 0, 1013)}, cont("r1.1", "a", 1, 1000, 3000))
	lim := testLimits
	lim.ExpiryRace = 12 * time.Millisecond
	if r := Check(h, lim); r.OK() || len(r.Overlaps) != 1 {
		t.Fatalf("13ms overlap passed a 12ms tolerance:\n%s", r.Summary())
	}
}

func TestCheck_ToleranceNeverExcusesAConcurrentLeader(t *testing.T) {
	// r1.1 works 5 ms entirely inside r0.1's tenure: not a handover.
	h := history(cont("r0.1", "a", 1, 0, 3000), []Record{work("r1.1", "a", 1, 1000, 1005)})
	lim := testLimits
	lim.ExpiryRace = 12 * time.Millisecond
	if r := Check(h, lim); r.OK() || len(r.Overlaps) != 1 {
		t.Fatalf("a second leader inside a tenure was excused:\n%s", r.Summary())
	}
}

func TestCheck_StalledLeaderWithinEvidenceIsReportedSeparately(t *testing.T) {
	// r0.1's last slice should have taken 50 ms but took 150 ms: its
	// process was not scheduled, and it overlapped r1.1 by 100 ms.
	a := append(cont("r0.1", "a", 1, 0, 950), work("r0.1", "a", 1, 950, 1100))
	h := history(a, cont("r1.1", "a", 1, 1000, 3000))
	lim := testLimits
	lim.ExpiryRace, lim.Slice = 12*time.Millisecond, 50*time.Millisecond
	r := Check(h, lim)
	if !r.OK() || len(r.StalledWindows) != 1 || r.MaxStalledWindow != 100*time.Millisecond {
		t.Fatalf("stalled leader not reported separately: %v\n%s", r.StalledWindows, r.Summary())
	}
	if !strings.Contains(r.Summary(), "stalled-leader windows") {
		t.Errorf("summary does not report stalled windows:\n%s", r.Summary())
	}
	// Without the slice length the same history fails.
	lim.Slice = 0
	if r := Check(h, lim); r.OK() || len(r.Overlaps) != 1 {
		t.Fatalf("overlap passed without stall evidence:\n%s", r.Summary())
	}
}

func TestCheck_StallShorterThanOverlapFails(t *testing.T) {
	// The last slice overran by 60 ms, the overlap is 100 ms: 60 ms + the
	// 12 ms tolerance do not explain it.
	a := append(cont("r0.1", "a", 1, 0, 990), work("r0.1", "a", 1, 990, 1100))
	h := history(a, cont("r1.1", "a", 1, 1000, 3000))
	lim := testLimits
	lim.ExpiryRace, lim.Slice = 12*time.Millisecond, 50*time.Millisecond
	if r := Check(h, lim); r.OK() || len(r.Overlaps) != 1 {
		t.Fatalf("100ms overlap excused by a 60ms stall:\n%s", r.Summary())
	}
}

func TestCheck_SliceOfNormalLengthIsNoStallEvidence(t *testing.T) {
	// r0.1 keeps working in normal slices 40 ms into r1.1's tenure.
	h := history(cont("r0.1", "a", 1, 0, 1040), cont("r1.1", "a", 1, 1000, 3000))
	lim := testLimits
	lim.ExpiryRace, lim.Slice = 12*time.Millisecond, 50*time.Millisecond
	if r := Check(h, lim); r.OK() || len(r.Overlaps) != 1 || len(r.StalledWindows) != 0 {
		t.Fatalf("overlap without a stall was excused:\n%s", r.Summary())
	}
}

// TestCheck_D4_EveryCategoryCountedApart: one role overlaps after a pause,
// one after a restart without persistence, one after a Sentinel failover,
// and one with no fault at all; each lands in its own category with its
// own count and longest overlap, and the summary lists every category.
func TestCheck_D4_EveryCategoryCountedApart(t *testing.T) {
	incs, exits := stoppedOK("r0.1", "r1.1", "r2.1")
	var recs []Record
	// role p: r0.1 paused 500..2000 finishes its slice 30ms after; r1.1 leads from 1600.
	recs = append(recs, cont("r0.1", "p", 1, 0, 500)...)
	recs = append(recs, work("r0.1", "p", 1, 500, 2030))
	recs = append(recs, cont("r1.1", "p", 1, 1600, 8000)...)
	// role s: restart 3000..3050; r2.1 from 3100 while r1.1 works to 3104.
	recs = append(recs, cont("r1.1", "s", 1, 0, 3104)...)
	recs = append(recs, cont("r2.1", "s", 1, 3100, 8000)...)
	// role f: Sentinel failover 5000..5050; r1.1 from 5100 while r2.1 works to 5140.
	recs = append(recs, cont("r2.1", "f", 1, 0, 5140)...)
	recs = append(recs, cont("r1.1", "f", 1, 5100, 8000)...)
	// role u: r1.1 and r2.1 overlap 60ms long after every fault.
	recs = append(recs, cont("r1.1", "u", 2, 0, 7060)...)
	recs = append(recs, cont("r2.1", "u", 1, 7000, 8000)...)
	h := History{Roles: []string{"f", "p", "s", "u"}, Records: append(recs, exits...), Incarnations: incs, From: at(0), To: at(8000),
		Faults: []Fault{
			pause(500, 2000),
			{Seq: 2, Kind: FaultRedisRestart, Target: -1, Start: at(3000), Heal: at(3050), LostState: true, Unavailable: true},
			{Seq: 3, Kind: FaultSentinelFailover, Target: -1, Start: at(5000), Heal: at(5050), LostState: true, Unavailable: true},
		}}
	r := Check(h, Limits{Lease: time.Second, RetryInterval: 250 * time.Millisecond, ExpiryRace: 12 * time.Millisecond})
	got := map[Category]CategoryStats{}
	for _, w := range r.Windows() {
		got[w.Category] = w
	}
	if len(got) != len(Categories) {
		t.Fatalf("Windows lists %d categories, want %d", len(got), len(Categories))
	}
	want := map[Category]CategoryStats{
		CategoryPaused:      {CategoryPaused, 1, 430 * time.Millisecond}, // 1600..2030
		CategoryStateLoss:   {CategoryStateLoss, 1, 4 * time.Millisecond},
		CategoryFailover:    {CategoryFailover, 1, 40 * time.Millisecond},
		CategoryLateExpiry:  {CategoryLateExpiry, 0, 0},
		CategoryStalled:     {CategoryStalled, 0, 0},
		CategoryUnexplained: {CategoryUnexplained, 1, 60 * time.Millisecond},
	}
	for c, w := range want {
		if got[c] != w {
			t.Errorf("%s = %+v, want %+v", c, got[c], w)
		}
	}
	if r.OK() {
		t.Error("an unexplained overlap passed")
	}
	sum := r.Summary()
	for _, c := range Categories {
		if !strings.Contains(sum, string(c)+" ") {
			t.Errorf("summary lacks category %s:\n%s", c, sum)
		}
	}
}

// TestCheck_D4_FailoverOverlapIsNotStateLoss: an overlap after a Sentinel
// master kill is a failover, not a restart.
func TestCheck_D4_FailoverOverlapIsNotStateLoss(t *testing.T) {
	h := history(cont("r0.1", "a", 1, 0, 1140), cont("r1.1", "a", 1, 1100, 3000))
	h.Faults = []Fault{{Seq: 1, Kind: FaultSentinelKillMaster, Target: -1, Start: at(1000), Heal: at(1050), LostState: true, Unavailable: true}}
	r := Check(h, testLimits)
	var fo, sl CategoryStats
	for _, w := range r.Windows() {
		switch w.Category {
		case CategoryFailover:
			fo = w
		case CategoryStateLoss:
			sl = w
		}
	}
	if fo.Count != 1 || fo.MaxOverlap != 40*time.Millisecond || sl.Count != 0 {
		t.Fatalf("failover %+v, state loss %+v; want one failover of 40ms", fo, sl)
	}
}

// memberFault is an etcd member fault from startMs to healMs.
func memberFault(kind FaultKind, startMs, healMs int) Fault {
	return Fault{Seq: 2, Kind: kind, Target: -1, Start: at(startMs), Heal: at(healMs), Member: true, Unavailable: true}
}

func TestCheck_N5_OverlapDuringMemberFaultFails(t *testing.T) {
	// The etcd leader is cut off at 900-1500; r1.1 starts at 1000 while
	// r0.1 works until 1300: the cluster gave a live lease away.
	h := history(cont("r0.1", "a", 1, 0, 1300), cont("r1.1", "a", 1, 1000, 3000))
	h.Faults = []Fault{memberFault(FaultEtcdPartition, 900, 1500)}
	r := Check(h, testLimits)
	if r.OK() {
		t.Fatalf("overlap during a member fault passed:\n%s", r.Summary())
	}
	if len(r.MemberFaultOverlaps) != 1 || len(r.Overlaps) != 0 {
		t.Fatalf("member-fault overlaps = %v, overlaps = %v; want one member-fault overlap", r.MemberFaultOverlaps, r.Overlaps)
	}
	if o := r.MemberFaultOverlaps[0]; o.Kind != FaultEtcdPartition || o.Length != 300*time.Millisecond {
		t.Errorf("overlap = %s, want 300ms attributed to %s", o, FaultEtcdPartition)
	}
	if w := r.Windows(); w[slicesIndex(Categories, CategoryMemberFault)].Count != 1 {
		t.Errorf("windows = %v, want one %s", w, CategoryMemberFault)
	}
	if !strings.Contains(r.Summary(), "overlaps during 1 cluster member faults: 1 (must be 0)") {
		t.Errorf("summary does not count the member-fault overlap:\n%s", r.Summary())
	}
}

func TestCheck_N5_MemberFaultGetsNoExpiryTolerance(t *testing.T) {
	// A 5 ms overlap is a late-expiry window elsewhere; within a lease of
	// a member fault's heal it breaks the guarantee.
	lim := testLimits
	lim.ExpiryRace = 12 * time.Millisecond
	h := history(cont("r0.1", "a", 1, 0, 2005), cont("r1.1", "a", 1, 2000, 3000))
	r := Check(h, lim)
	if !r.OK() || len(r.LateExpiry) != 1 {
		t.Fatalf("a 5ms overlap without faults: late-expiry %v, ok %v\n%s", r.LateExpiry, r.OK(), r.Summary())
	}
	h.Faults = []Fault{memberFault(FaultEtcdLeaderKill, 500, 1200)}
	r = Check(h, lim)
	if r.OK() || len(r.MemberFaultOverlaps) != 1 {
		t.Fatalf("a 5ms overlap 800ms after a leader kill healed: member-fault %v, ok %v\n%s", r.MemberFaultOverlaps, r.OK(), r.Summary())
	}
}

func TestCheck_N5_ReplicaPauseDuringMemberFaultIsCountedApart(t *testing.T) {
	// r0.1 is paused (its own process) during a member pause: the overlap
	// after its resume is a paused window, not a member-fault overlap.
	recs := append(cont("r0.1", "a", 1, 0, 500), work("r0.1", "a", 1, 500, 2030))
	h := history(recs, cont("r1.1", "a", 1, 1600, 3000))
	h.Faults = []Fault{pause(500, 2000), memberFault(FaultEtcdMemberPause, 400, 1700)}
	r := Check(h, testLimits)
	if !r.OK() {
		t.Fatalf("a replica's own pause during a member fault failed:\n%s", r.Summary())
	}
	if len(r.PausedWindows) != 1 || len(r.MemberFaultOverlaps) != 0 {
		t.Fatalf("paused = %v, member-fault = %v; want one paused window", r.PausedWindows, r.MemberFaultOverlaps)
	}
}

func TestCheck_N5_StallDuringMemberFaultIsCountedApart(t *testing.T) {
	// r0.1's last slice ran 400 ms instead of 50 (its process was not
	// scheduled) across r1.1's start: a stalled window, the replica's own.
	lim := testLimits
	lim.Slice = 50 * time.Millisecond
	recs := append(cont("r0.1", "a", 1, 0, 1000), work("r0.1", "a", 1, 1000, 1400))
	h := history(recs, cont("r1.1", "a", 1, 1300, 3000))
	h.Faults = []Fault{memberFault(FaultEtcdMemberKill, 900, 1500)}
	r := Check(h, lim)
	if !r.OK() {
		t.Fatalf("a stall during a member fault failed:\n%s", r.Summary())
	}
	if len(r.StalledWindows) != 1 || len(r.MemberFaultOverlaps) != 0 {
		t.Fatalf("stalled = %v, member-fault = %v; want one stalled window", r.StalledWindows, r.MemberFaultOverlaps)
	}
}

func TestCheck_N5_OverlapLongAfterMemberFaultIsUnexplained(t *testing.T) {
	// Beyond a lease and the slack after the heal, the member fault no
	// longer claims the overlap: it is unexplained.
	h := history(cont("r0.1", "a", 1, 0, 2500), cont("r1.1", "a", 1, 2200, 3000))
	h.Faults = []Fault{memberFault(FaultEtcdRestart, 500, 1000)}
	r := Check(h, testLimits)
	if len(r.Overlaps) != 1 || len(r.MemberFaultOverlaps) != 0 {
		t.Fatalf("overlaps = %v, member-fault = %v; want one unexplained", r.Overlaps, r.MemberFaultOverlaps)
	}
}

func slicesIndex(cs []Category, c Category) int {
	for i, x := range cs {
		if x == c {
			return i
		}
	}
	return -1
}

func TestCheck_N5_ExpiryLagWidensTheRecoveryBound(t *testing.T) {
	// 1.7 s leaderless after a crash: beyond 1s+250ms+100ms, within it
	// plus etcd's 500 ms expiry tick.
	h := history(cont("r0.1", "a", 1, 0, 1000), cont("r1.1", "a", 1, 2700, 3000))
	if r := Check(h, testLimits); len(r.SlowRecovery) != 1 {
		t.Fatalf("1.7s leaderless without an expiry lag: slow recoveries %v\n%s", r.SlowRecovery, r.Summary())
	}
	lim := testLimits
	lim.ExpiryLag = EtcdExpiryLag
	if got, want := lim.RecoveryBound(), 1850*time.Millisecond; got != want {
		t.Fatalf("RecoveryBound = %v, want %v", got, want)
	}
	if r := Check(h, lim); !r.OK() {
		t.Fatalf("1.7s leaderless with a 500ms expiry lag failed:\n%s", r.Summary())
	}
}

func TestCheck_N5_LeaseExtensionAfterLeaderChangeWidensTheBound(t *testing.T) {
	// The etcd leader is killed at 500 and healed at 1000; every lease was
	// extended by 1.5 s, so the role may stay leaderless until 1000 +
	// 1.35 s + 1.5 s, and no longer.
	f := memberFault(FaultEtcdLeaderKill, 500, 1000)
	h := history(cont("r0.1", "a", 1, 0, 600), cont("r1.1", "a", 1, 3500, 4000))
	h.To = at(4000)
	h.Faults = []Fault{f}
	if r := Check(h, testLimits); len(r.SlowRecovery) != 1 {
		t.Fatalf("2.5s counted after the heal without an extension: slow recoveries %v\n%s", r.SlowRecovery, r.Summary())
	}
	h.Faults[0].Extended = 1500 * time.Millisecond
	r := Check(h, testLimits)
	if !r.OK() {
		t.Fatalf("2.5s counted after a heal that extended leases by 1.5s failed:\n%s", r.Summary())
	}
	if !strings.Contains(r.MaxCountedGap.Cause, "leases extended by up to 1.5s") {
		t.Errorf("gap cause %q does not name the extension", r.MaxCountedGap.Cause)
	}
	late := history(cont("r0.1", "a", 1, 0, 600), cont("r1.1", "a", 1, 3900, 4000))
	late.To, late.Faults = at(4000), h.Faults
	if r := Check(late, testLimits); len(r.SlowRecovery) != 1 {
		t.Fatalf("2.9s counted after the heal passed a bound of 2.85s: slow recoveries %v\n%s", r.SlowRecovery, r.Summary())
	}
}

func TestCheck_B1_BalanceWaitWidensTheRecoveryBound(t *testing.T) {
	// 1.5 s leaderless after a crash: beyond 1s+250ms+100ms, within it
	// plus the 250 ms a balancing candidate at its share lets others go
	// first.
	h := history(cont("r0.1", "a", 1, 0, 1000), cont("r1.1", "a", 1, 2500, 3000))
	if r := Check(h, testLimits); len(r.SlowRecovery) != 1 {
		t.Fatalf("1.5s leaderless without balancing: slow recoveries %v\n%s", r.SlowRecovery, r.Summary())
	}
	cfg := DefaultConfig()
	cfg.Process, cfg.Balance = true, true
	lim := cfg.Limits()
	if got, want := lim.RecoveryBound(), 1600*time.Millisecond; got != want {
		t.Fatalf("RecoveryBound with balancing = %v, want %v", got, want)
	}
	if r := Check(h, lim); !r.OK() {
		t.Fatalf("1.5s leaderless with balancing failed:\n%s", r.Summary())
	}
	cfg.Balance = false
	if got := cfg.Limits().BalanceWait; got != 0 {
		t.Fatalf("BalanceWait without balancing = %v, want 0", got)
	}
}

func TestCheck_B1_DelayedTakerAddsItsDelayToTheBound(t *testing.T) {
	// r0.1 hands the role over at 1000 (no fault of its own) to r1.1,
	// whose link is delayed 460ms from 800 to 2800: r1.1 takes it at
	// 2500. The bound is 1.35s + 460ms.
	delayed := []Fault{{Seq: 4, Kind: FaultDelay, Target: 1, Identity: "r1.1", Start: at(800), Heal: at(2800), Delay: 460 * time.Millisecond}}
	h := history(cont("r0.1", "a", 1, 0, 1000), cont("r1.1", "a", 1, 2500, 3000))
	h.Faults = delayed
	r := Check(h, testLimits)
	if !r.OK() || r.MaxCountedGap.Bound != 1810*time.Millisecond || !strings.Contains(r.MaxCountedGap.Cause, "taken by r1.1, whose link was delayed by fault #4") {
		t.Fatalf("1.5s leaderless before a delayed taker failed (bound %v, cause %q):\n%s", r.MaxCountedGap.Bound, r.MaxCountedGap.Cause, r.Summary())
	}
	// Taken by another participant, the delay on r1.1's link adds nothing.
	h = history(cont("r0.1", "a", 1, 0, 1000), cont("r2.1", "a", 1, 2500, 3000))
	h.Faults = delayed
	if r := Check(h, testLimits); r.OK() {
		t.Fatalf("a delay on a bystander's link excused 1.5s leaderless:\n%s", r.Summary())
	}
	// A delay that healed before the gap began adds nothing either.
	h = history(cont("r0.1", "a", 1, 0, 1000), cont("r1.1", "a", 1, 2500, 3000))
	h.Faults = []Fault{{Seq: 4, Kind: FaultDelay, Target: 1, Identity: "r1.1", Start: at(100), Heal: at(900), Delay: 460 * time.Millisecond}}
	if r := Check(h, testLimits); r.OK() {
		t.Fatalf("a delay healed before the gap excused 1.5s leaderless:\n%s", r.Summary())
	}
}
