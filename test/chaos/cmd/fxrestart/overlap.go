//go:build unix

package main

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// tsLayout is the example's log time format (zap's ISO8601 encoder):
// millisecond resolution.
const tsLayout = "2006-01-02T15:04:05.000Z0700"

// logEntry is the part of one JSON log line of the example that the
// measurement reads.
type logEntry struct {
	TS   string `json:"ts"`
	Msg  string `json:"msg"`
	Role string `json:"role"`
	Term uint64 `json:"term"`
	Addr string `json:"addr"`
}

// event is one leadership transition of one process.
type event struct {
	At     time.Time
	Proc   string
	Role   string
	Leader bool   // true: the term began; false: it ended
	Term   uint64 // the process's term number
	Msg    string
}

// parseLine turns a log line into a transition or a job run; ok is false
// for any other line.
func parseLine(proc, line string) (ev event, run bool, ok bool) {
	var e logEntry
	if json.Unmarshal([]byte(line), &e) != nil || e.Role == "" {
		return event{}, false, false
	}
	switch e.Msg {
	case "LeadershipAcquired":
		ev.Leader = true
	case "LeadershipLost", "LeadershipReleased", "LeadershipResigned":
	case "InvoicesRun":
		run = true
	default:
		return event{}, false, false
	}
	at, err := time.Parse(tsLayout, e.TS)
	if err != nil {
		return event{}, false, false
	}
	return event{At: at, Proc: proc, Role: e.Role, Leader: ev.Leader, Term: e.Term, Msg: e.Msg}, run, true
}

// tenure is one process's term of one role: it believed it led from Start
// to End.
type tenure struct {
	Proc       string
	Role       string
	Term       uint64
	Start, End time.Time
}

// tenures pairs each process's acquisitions with the end of the same term;
// a term still running at until ends there. events need not be sorted.
func tenures(events []event, until time.Time) []tenure {
	sorted := slices.Clone(events)
	slices.SortStableFunc(sorted, func(a, b event) int { return a.At.Compare(b.At) })
	type key struct{ proc, role string }
	open := map[key]*tenure{}
	var out []tenure
	for _, ev := range sorted {
		k := key{ev.Proc, ev.Role}
		t, running := open[k]
		switch {
		case ev.Leader && !running:
			open[k] = &tenure{Proc: ev.Proc, Role: ev.Role, Term: ev.Term, Start: ev.At}
		case !ev.Leader && running:
			t.End = ev.At
			out = append(out, *t)
			delete(open, k)
		}
	}
	for _, t := range open {
		t.End = until
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b tenure) int {
		return cmp.Or(cmp.Compare(a.Role, b.Role), a.Start.Compare(b.Start), cmp.Compare(a.Proc, b.Proc))
	})
	return out
}

// window is a stretch of time in which Leaders processes believed they led
// Role at once: 0 (leaderless) or 2 and more (an overlap).
type window struct {
	Role       string
	Start, End time.Time
	Procs      []string // who led during it (none when leaderless)
}

// Len is the window's length.
func (w window) Len() time.Duration { return w.End.Sub(w.Start) }

// windows sweeps each role's tenures between from and until and returns its
// overlaps (two or more leaders) and its leaderless stretches (none), each
// in time order. A zero-length stretch is not a window.
func windows(ts []tenure, roles []string, from, until time.Time) (overlaps, leaderless []window) {
	for _, role := range roles {
		type edge struct {
			at    time.Time
			delta int
			proc  string
		}
		var edges []edge
		for _, t := range ts {
			if t.Role != role {
				continue
			}
			s, e := maxTime(t.Start, from), minTime(t.End, until)
			if !s.Before(e) {
				continue
			}
			edges = append(edges, edge{s, +1, t.Proc}, edge{e, -1, t.Proc})
		}
		// Ends before starts at the same instant: touching terms do not
		// overlap.
		slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.delta, b.delta)) })
		leaders := map[string]int{}
		prev := from
		emit := func(at time.Time) {
			if !prev.Before(at) {
				return
			}
			n := 0
			for _, c := range leaders {
				n += c
			}
			w := window{Role: role, Start: prev, End: at}
			for p, c := range leaders {
				if c > 0 {
					w.Procs = append(w.Procs, p)
				}
			}
			slices.Sort(w.Procs)
			switch {
			case n == 0:
				leaderless = appendJoined(leaderless, w)
			case n >= 2:
				overlaps = appendJoined(overlaps, w)
			}
		}
		for _, ed := range edges {
			emit(ed.at)
			prev = ed.at
			leaders[ed.proc] += ed.delta
			if leaders[ed.proc] == 0 {
				delete(leaders, ed.proc)
			}
		}
		emit(until)
	}
	return overlaps, leaderless
}

// appendJoined appends w, merged into the last window when it continues it
// (the same role, no gap), so a stretch split by a third leader joining
// counts once.
func appendJoined(ws []window, w window) []window {
	if n := len(ws); n > 0 && ws[n-1].Role == w.Role && ws[n-1].End.Equal(w.Start) {
		ws[n-1].End = w.End
		for _, p := range w.Procs {
			if !slices.Contains(ws[n-1].Procs, p) {
				ws[n-1].Procs = append(ws[n-1].Procs, p)
			}
		}
		slices.Sort(ws[n-1].Procs)
		return ws
	}
	return append(ws, w)
}

// restart is one kill of the server and the empty start after it.
type restart struct {
	Killed, Up time.Time
}

// bucket returns the index of the restart a window that begins at t
// follows: -1 before the first.
func bucket(rs []restart, t time.Time) int {
	i := -1
	for j, r := range rs {
		if !t.Before(r.Killed) {
			i = j
		}
	}
	return i
}

// restartStats is what one restart caused, every role together.
type restartStats struct {
	Overlaps      int
	MaxOverlap    time.Duration
	MaxLeaderless time.Duration // the longest leaderless stretch of any role
	Leaderless    map[string]time.Duration
	TermsEnded    int // terms that ended (lost or released) after it
	// FirstEnd is the first term that ended after it, counted from the
	// server's start (Up): how soon a leader learned its lease was gone.
	// Zero when none ended.
	FirstEnd    time.Duration
	RunsOverlap int // job runs logged inside an overlap of their role
}

// summarize attributes every window, transition and job run to the restart
// it follows; index 0 of the result is "before the first restart", index
// i+1 is restart i.
func summarize(rs []restart, overlaps, leaderless []window, events []event, runs []event) []restartStats {
	out := make([]restartStats, len(rs)+1)
	for i := range out {
		out[i].Leaderless = map[string]time.Duration{}
	}
	for _, w := range overlaps {
		s := &out[bucket(rs, w.Start)+1]
		s.Overlaps++
		s.MaxOverlap = max(s.MaxOverlap, w.Len())
	}
	for _, w := range leaderless {
		s := &out[bucket(rs, w.Start)+1]
		s.Leaderless[w.Role] += w.Len()
		s.MaxLeaderless = max(s.MaxLeaderless, w.Len())
	}
	for _, ev := range events {
		if ev.Leader {
			continue
		}
		b := bucket(rs, ev.At)
		s := &out[b+1]
		s.TermsEnded++
		if b >= 0 {
			if d := ev.At.Sub(rs[b].Up); s.TermsEnded == 1 || d < s.FirstEnd {
				s.FirstEnd = d
			}
		}
	}
	for _, r := range runs {
		for _, w := range overlaps {
			if w.Role == r.Role && !r.At.Before(w.Start) && !r.At.After(w.End) {
				out[bucket(rs, w.Start)+1].RunsOverlap++
				break
			}
		}
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// leaderAt names the processes that led role at t ("-" for none).
func leaderAt(ts []tenure, role string, t time.Time) string {
	var who []string
	for _, te := range ts {
		if te.Role == role && !t.Before(te.Start) && t.Before(te.End) {
			who = append(who, te.Proc)
		}
	}
	if len(who) == 0 {
		return "-"
	}
	slices.Sort(who)
	return strings.Join(slices.Compact(who), "+")
}
