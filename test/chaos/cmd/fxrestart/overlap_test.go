//go:build unix

package main

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func ev(ms int, proc, role string, leader bool) event {
	return event{At: at(ms), Proc: proc, Role: role, Leader: leader}
}

func TestParseLine_ReadsTransitionsAndRuns(t *testing.T) {
	cases := []struct {
		line         string
		ok, run, led bool
	}{
		{`{"level":"info","ts":"2026-12-01T23:14:51.710Z","msg":"LeadershipAcquired","role":"billing","term":1}`, true, false, true},
		{`{"level":"warn","ts":"2026-12-01T23:14:51.711Z","msg":"LeadershipLost","role":"inventory","term":2}`, true, false, false},
		{`{"level":"info","ts":"2026-12-01T23:14:51.711Z","msg":"LeadershipReleased","role":"billing","term":2}`, true, false, false},
		{`{"level":"info","ts":"2026-12-01T23:14:51.711Z","msg":"InvoicesRun","role":"billing","term":2}`, true, true, false},
		{`{"level":"info","ts":"2026-12-01T23:14:51.711Z","msg":"LeadershipNewLeader","role":"billing"}`, false, false, false},
		{`{"level":"info","ts":"2026-12-01T23:14:51.711Z","msg":"LeadershipAcquired"}`, false, false, false},
		{`{"level":"info","ts":"yesterday","msg":"LeadershipAcquired","role":"billing"}`, false, false, false},
		{`not json`, false, false, false},
	}
	for _, c := range cases {
		e, run, ok := parseLine("p1", c.line)
		if ok != c.ok || run != c.run || (ok && e.Leader != c.led) {
			t.Errorf("parseLine(%s) = %+v, run %v, ok %v; want ok %v run %v leader %v", c.line, e, run, ok, c.ok, c.run, c.led)
		}
	}
	e, _, _ := parseLine("p1", cases[0].line)
	if want := time.Date(2026, 12, 1, 23, 14, 51, 710e6, time.UTC); !e.At.Equal(want) || e.Proc != "p1" || e.Term != 1 {
		t.Errorf("parsed %+v, want p1 term 1 at %v", e, want)
	}
}

func TestWindows_OverlapsAndLeaderlessPerRole(t *testing.T) {
	events := []event{
		ev(0, "p1", "a", true),
		ev(1000, "p2", "a", true), // p1 still leads: overlap 1000..1040
		ev(1040, "p1", "a", false),
		ev(2000, "p2", "a", false), // leaderless 2000..2500
		ev(2500, "p3", "a", true),  // runs to the end
		ev(0, "p1", "b", true),
		ev(1000, "p1", "b", false),
		ev(1000, "p2", "b", true), // touching: no overlap, no gap
	}
	ts := tenures(events, at(3000))
	if len(ts) != 5 {
		t.Fatalf("tenures = %+v, want 5", ts)
	}
	ov, free := windows(ts, []string{"a", "b"}, at(0), at(3000))
	if len(ov) != 1 || ov[0].Role != "a" || ov[0].Len() != 40*time.Millisecond || !slices.Equal(ov[0].Procs, []string{"p1", "p2"}) {
		t.Errorf("overlaps = %+v, want a 40ms by p1+p2", ov)
	}
	if len(free) != 1 || free[0].Role != "a" || !free[0].Start.Equal(at(2000)) || free[0].Len() != 500*time.Millisecond {
		t.Errorf("leaderless = %+v, want a 500ms from 2000", free)
	}
}

func TestWindows_ThreeLeadersCountOnce(t *testing.T) {
	events := []event{
		ev(0, "p1", "a", true), ev(100, "p2", "a", true), ev(110, "p3", "a", true),
		ev(120, "p1", "a", false), ev(130, "p2", "a", false),
	}
	ov, _ := windows(tenures(events, at(500)), []string{"a"}, at(0), at(500))
	if len(ov) != 1 || !ov[0].Start.Equal(at(100)) || ov[0].Len() != 30*time.Millisecond || len(ov[0].Procs) != 3 {
		t.Errorf("overlaps = %+v, want one of 30ms by three", ov)
	}
}

func TestSummarize_AttributesToThePrecedingRestart(t *testing.T) {
	rs := []restart{{Killed: at(1000), Up: at(1010)}, {Killed: at(5000), Up: at(5010)}}
	events := []event{
		ev(0, "p1", "a", true),
		ev(1100, "p2", "a", true),
		ev(1150, "p1", "a", false), // 50ms overlap after restart 1
		ev(5100, "p2", "a", false),
		ev(5103, "p2", "a", true), // 3ms leaderless after restart 2
	}
	ov, free := windows(tenures(events, at(9000)), []string{"a"}, at(0), at(9000))
	runs := []event{{At: at(1120), Proc: "p1", Role: "a"}, {At: at(3000), Proc: "p2", Role: "a"}}
	st := summarize(rs, ov, free, events, runs)
	if len(st) != 3 {
		t.Fatalf("%d buckets, want 3", len(st))
	}
	if st[0].Overlaps != 0 || st[0].TermsEnded != 0 {
		t.Errorf("before = %+v", st[0])
	}
	if st[1].Overlaps != 1 || st[1].MaxOverlap != 50*time.Millisecond || st[1].TermsEnded != 1 || st[1].RunsOverlap != 1 || st[1].Leaderless["a"] != 0 {
		t.Errorf("restart 1 = %+v, want one 50ms overlap, one ended term, one run inside", st[1])
	}
	if st[2].Overlaps != 0 || st[2].Leaderless["a"] != 3*time.Millisecond || st[2].MaxLeaderless != 3*time.Millisecond || st[2].TermsEnded != 1 {
		t.Errorf("restart 2 = %+v, want 3ms leaderless, one ended term", st[2])
	}
	if st[1].FirstEnd != 140*time.Millisecond || st[2].FirstEnd != 90*time.Millisecond {
		t.Errorf("first ended %v and %v after the restarts' starts, want 140ms and 90ms", st[1].FirstEnd, st[2].FirstEnd)
	}
	ts := tenures(events, at(9000))
	for _, c := range []struct {
		ms   int
		want string
	}{{999, "p1"}, {1120, "p1+p2"}, {5101, "-"}, {8999, "p2"}} {
		if got := leaderAt(ts, "a", at(c.ms)); got != c.want {
			t.Errorf("leaderAt(%d) = %q, want %q", c.ms, got, c.want)
		}
	}
}
