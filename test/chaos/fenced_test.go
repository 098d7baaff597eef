package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fenced is a term's run of back-to-back 50 ms slices over [fromMs, toMs],
// each Assert-checked 1 ms after its start and followed by a fenced effect
// with fence f, all accepted; seq numbers continue from *seq.
func fenced(id string, term, f uint64, seq *uint64, fromMs, toMs int) []Record {
	recs := cont(id, "a", term, fromMs, toMs)
	for i := range recs {
		*seq++
		effect(&recs[i], f, *seq, EffectAccepted)
	}
	return recs
}

// effect fills rec's Assert check (1 ms after its start) and fenced effect
// (at its end).
func effect(rec *Record, f, seq uint64, outcome string) {
	rec.Checked = rec.Start + int64(time.Millisecond)
	rec.Fence, rec.Seq, rec.Effect = f, seq, outcome
	rec.EffectAt, rec.EffectDone = rec.End, rec.End+int64(time.Millisecond)
}

// stored is the store's log for recs: their entries, in the given order,
// for the records whose outcome is accepted.
func stored(recs ...[]Record) []string {
	var out []string
	for _, rs := range recs {
		for _, r := range rs {
			if r.Effect == EffectAccepted {
				out = append(out, entryOf(r))
			}
		}
	}
	return out
}

func entryOf(r Record) string {
	return EffectEntry{Identity: r.Identity, Term: r.Term, Fence: r.Fence, Seq: r.Seq}.String()
}

func TestCheck_G5_FencedEffectsInStoreOrderPass(t *testing.T) {
	var s0, s1 uint64
	a := fenced("r0.1", 1, 10, &s0, 0, 1000)
	b := fenced("r1.1", 1, 20, &s1, 1200, 3000)
	// r0.1 resumes a last slice and writes at 1250, after r1.1 began but
	// before r1.1's first write landed (the store's order decides): the
	// gate accepts it. Its next write comes after r1.1's and is refused.
	late := work("r0.1", "a", 1, 950, 1250)
	effect(&late, 10, 100, EffectAccepted)
	refused := work("r0.1", "a", 1, 950, 1260)
	effect(&refused, 10, 101, EffectStale)
	h := history(a, []Record{late, refused}, b)
	h.Effects = map[string][]string{"a": append(stored(a, []Record{late}), stored(b)...)}
	h.Faults = []Fault{pause(960, 1240)}
	r := Check(h, testLimits)
	if !r.OK() {
		t.Fatalf("a store in fence order failed:\n%s", r.Summary())
	}
	want := EffectStats{Attempted: 20 + 2 + 36, Accepted: 20 + 1 + 36, Refused: 1, Stored: 20 + 1 + 36, LateAccepted: 1}
	if r.Effects != want {
		t.Errorf("effects = %+v, want %+v", r.Effects, want)
	}
	// The same slices overlap r1.1 in time: reported as today (paused).
	if len(r.PausedWindows) == 0 {
		t.Errorf("the unfenced overlap was not reported:\n%s", r.Summary())
	}
	if !strings.Contains(r.Summary(), "stale accepted effects: 0") {
		t.Errorf("summary lacks the fenced verdict:\n%s", r.Summary())
	}
}

func TestCheck_G5_StaleAcceptedEffectFailsEvenAfterLostState(t *testing.T) {
	// Redis (the lock store) restarted: the overlap in time is excused as
	// lost state, but an accepted write with a lower fence after a higher
	// one is never excused.
	var s0, s1 uint64
	a := fenced("r0.1", 1, 10, &s0, 0, 1250)
	b := fenced("r1.1", 1, 20, &s1, 1100, 3000)
	h := history(a, b)
	h.Faults = []Fault{restart(1000, 1050)}
	// Store order: r0.1 up to its slice at 1050, then r1.1's first, then
	// r0.1's last three (fence 10 after 20), then the rest of r1.1.
	aa, bb := stored(a), stored(b)
	h.Effects = map[string][]string{"a": append(append(append(append([]string{}, aa[:22]...), bb[0]), aa[22:]...), bb[1:]...)}
	r := Check(h, testLimits)
	if r.OK() || len(r.StaleAccepted) != 3 {
		t.Fatalf("stale accepted = %v, want 3 (r0.1's entries after r1.1's)\n%s", r.StaleAccepted, r.Summary())
	}
	st := r.StaleAccepted[0]
	if st.Entry.Identity != "r0.1" || st.Entry.Fence != 10 || st.Highest.Fence != 20 || st.Index != 23 {
		t.Errorf("stale effect = %s, want r0.1 fence 10 at entry 23 after fence 20", st)
	}
	if len(r.Interleavings) != 2 {
		t.Errorf("interleavings = %v, want r0.1 resuming after r1.1, then r1.1 after r0.1", r.Interleavings)
	}
	if len(r.LostStateOverlaps) != 1 {
		t.Errorf("the time overlap should still be reported as lost state:\n%s", r.Summary())
	}
	if !strings.Contains(r.Summary(), "stale effect accepted: role a entry 23: r0.1 (fence 10) accepted after r1.1 (fence 20)") {
		t.Errorf("summary does not name the stale effect:\n%s", r.Summary())
	}
}

func TestCheck_G5_StoreProblemsFail(t *testing.T) {
	var s0, s1 uint64
	a := fenced("r0.1", 1, 10, &s0, 0, 1000)
	b := fenced("r1.1", 1, 20, &s1, 1200, 3000)
	cases := map[string]struct {
		history func() History
		want    string
	}{
		"shared fence": {func() History {
			b2 := fenced("r1.1", 1, 10, new(uint64), 1200, 3000)
			h := history(a, b2)
			h.Effects = map[string][]string{"a": stored(a, b2)}
			return h
		}, "fence 10 carried by r0.1 term 1 and r1.1 term 1"},
		"two fences in a term": {func() History {
			h := history(a, b)
			h.Effects = map[string][]string{"a": append(stored(a, b), EffectEntry{Identity: "r1.1", Term: 1, Fence: 21, Seq: 999}.String())}
			return h
		}, "r1.1 term 1 wrote with fence 20 and 21"},
		"accepted but missing": {func() History {
			h := history(a, b)
			h.Effects = map[string][]string{"a": stored(a, b)[1:]}
			return h
		}, "r0.1 seq 1 (fence 10) was accepted but is not in the store"},
		"refused but stored": {func() History {
			h := history(a, b)
			h.Records[0].Effect = EffectStale // history copies the records
			h.Effects = map[string][]string{"a": stored(a, b)}
			return h
		}, "r0.1 seq 1 was refused as stale but is in the store"},
		"malformed entry": {func() History {
			h := history(a, b)
			h.Effects = map[string][]string{"a": append(stored(a, b), "r1.1 1 twenty 5")}
			return h
		}, `role a entry 56: chaos: effect entry "r1.1 1 twenty 5"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := Check(c.history(), testLimits)
			if r.OK() {
				t.Fatalf("passed:\n%s", r.Summary())
			}
			if !strings.Contains(strings.Join(r.Problems(), "\n"), c.want) {
				t.Fatalf("problems lack %q:\n%s", c.want, r.Summary())
			}
		})
	}
}

func TestCheck_G5_UnrecordedEntryIsJudgedByItsFence(t *testing.T) {
	var s0, s1 uint64
	a := fenced("r0.1", 1, 10, &s0, 0, 1000)
	b := fenced("r1.1", 1, 20, &s1, 1200, 3000)
	killed := EffectEntry{Identity: "r0.1", Term: 1, Fence: 10, Seq: 77}.String() // written, then SIGKILL
	h := history(a, b)
	h.Effects = map[string][]string{"a": append(append(stored(a), killed), stored(b)...)}
	if r := Check(h, testLimits); !r.OK() || r.Effects.Unrecorded != 1 {
		t.Fatalf("an unrecorded entry in fence order: unrecorded %d\n%s", r.Effects.Unrecorded, r.Summary())
	}
	h.Effects = map[string][]string{"a": append(append(stored(a), stored(b)...), killed)}
	if r := Check(h, testLimits); r.OK() || len(r.StaleAccepted) != 1 {
		t.Fatalf("an unrecorded stale entry passed:\n%s", r.Summary())
	}
}

// assertHistory: r0.1 leads until 1000, r1.1 from 1200; r0.1's last
// record is replaced by last.
func assertHistory(last Record) History {
	var s0, s1 uint64
	a := fenced("r0.1", 1, 10, &s0, 0, 950)
	b := fenced("r1.1", 1, 20, &s1, 1200, 3000)
	last.Fence, last.Seq, last.Effect = 10, 999, EffectStale
	return history(a, []Record{last}, b)
}

func TestCheck_G3_AssertAfterSuccessorBeganFails(t *testing.T) {
	cases := map[string]struct {
		faults []Fault
		check  int // ms at which Assert began and passed
		bucket func(r *Report) []Overlap
	}{
		// r0.1 was paused 500..1300, and its first check after SIGCONT
		// passed: Assert did not consult the clock.
		"paused": {[]Fault{pause(500, 1300)}, 1305, func(r *Report) []Overlap { return r.Asserts.Paused }},
		// 2 ms after the successor began: inside Redlock's drift
		// allowance, but Assert has no excuse for it.
		"late-expiry": {nil, 1202, func(r *Report) []Overlap { return r.Asserts.LateExpiry }},
		"other":       {nil, 1400, func(r *Report) []Overlap { return r.Asserts.Other }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			last := work("r0.1", "a", 1, c.check, c.check+1)
			last.Checked = last.Start
			h := assertHistory(last)
			h.Faults = c.faults
			lim := testLimits
			lim.ExpiryRace = DefaultExpiryRace(lim.Lease)
			r := Check(h, lim)
			got := c.bucket(r)
			if r.OK() || len(got) != 1 {
				t.Fatalf("%s check after the successor: bucket %v\n%s", name, got, r.Summary())
			}
			if want := time.Duration(c.check-1200) * time.Millisecond; got[0].Length != want {
				t.Errorf("length = %v, want %v", got[0].Length, want)
			}
		})
	}
}

func TestCheck_G3_AssertStraddlingTheSuccessorIsReported(t *testing.T) {
	// r0.1 began its check at 940 and was stopped before the next clock
	// read; resumed at 1300 it finished the slice at once. The check
	// itself may have been on time: reported, not failed.
	last := work("r0.1", "a", 1, 940, 1301)
	last.Checked = at(1300).UnixNano()
	h := assertHistory(last)
	h.Faults = []Fault{pause(945, 1300)}
	r := Check(h, testLimits)
	if !r.OK() {
		t.Fatalf("a straddling check failed:\n%s", r.Summary())
	}
	if len(r.Asserts.Straddles) != 1 || r.Asserts.Straddles[0].Length != 100*time.Millisecond {
		t.Fatalf("straddles = %v, want one of 100ms", r.Asserts.Straddles)
	}
}

func TestCheck_G3_AssertAfterLostStateIsBounded(t *testing.T) {
	// Redis restarted empty at 1000..1050; r1.1 acquired at once; r0.1's
	// local deadline was still ahead, so Assert passed at 1150.
	var s0, s1 uint64
	a := fenced("r0.1", 1, 10, &s0, 0, 1150)
	b := fenced("r1.1", 1, 20, &s1, 1100, 3000)
	h := history(a, b)
	h.Faults = []Fault{restart(1000, 1050)}
	r := Check(h, testLimits)
	if !r.OK() || len(r.Asserts.LostState) != 1 || r.Asserts.LostState[0].Length != 1*time.Millisecond {
		t.Fatalf("lost-state Assert window: %v\n%s", r.Asserts.LostState, r.Summary())
	}
	// A check 1.5 s after the heal is beyond lease + slack.
	late := work("r0.1", "a", 1, 2550, 2560)
	late.Checked = late.Start
	h.Records = append(h.Records, late)
	r = Check(h, testLimits)
	if !strings.Contains(strings.Join(r.Problems(), "\n"), "Assert passed 1.5s after a lost-state fault healed") {
		t.Fatalf("Assert passing 1.5s after the heal was not a problem:\n%s", r.Summary())
	}
}

func TestCheck_G3_TermRevivedAfterPauseFails(t *testing.T) {
	// r0.1 is stopped 500..1700 (beyond the 1s lease) and nobody takes
	// over; after SIGCONT its worker must begin a new term, not go on.
	var s0 uint64
	before := fenced("r0.1", 1, 10, &s0, 0, 500)
	h := history(before, fenced("r0.1", 1, 10, &s0, 1700, 3000))
	h.Faults = []Fault{pause(500, 1700)}
	r := Check(h, testLimits)
	if r.OK() || len(r.Asserts.Revived) != 1 || !strings.Contains(r.Asserts.Revived[0], "r0.1 term 1 began at") {
		t.Fatalf("revived term: %v\n%s", r.Asserts.Revived, r.Summary())
	}
	// A new term after the pause passes.
	h = history(before, fenced("r0.1", 2, 30, &s0, 1800, 3000))
	h.Faults = []Fault{pause(500, 1700)}
	if r := Check(h, testLimits); !r.OK() {
		t.Fatalf("a new term after the pause failed:\n%s", r.Summary())
	}
}

func TestParseEffectEntry(t *testing.T) {
	e := EffectEntry{Identity: "r2.3", Term: 7, Fence: 1764547200123456, Seq: 42}
	got, err := ParseEffectEntry(e.String())
	if err != nil || got != e {
		t.Fatalf("round trip of %q = %+v, %v", e.String(), got, err)
	}
	for _, bad := range []string{"", "r2.3 7 1", "r2.3 7 -1 4", "r2.3 x 1 4", "r2.3 7 1 4 5", "r2.3 7 18446744073709551616 4"} {
		if _, err := ParseEffectEntry(bad); err == nil || !strings.Contains(err.Error(), "effect entry") {
			t.Errorf("ParseEffectEntry(%q) = %v, want an error quoting it", bad, err)
		}
	}
}

func TestRecheck_G5_ReadsTheSavedEffects(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	var s0, s1 uint64
	a := fenced("r0.1", 1, 10, &s0, 0, 1000)
	b := fenced("r1.1", 1, 20, &s1, 1200, 3000)
	must(writeJSON(filepath.Join(dir, "run.json"), runFile{Roles: []string{"a"}, From: at(0), To: at(3000), Limits: testLimits}))
	must(writeJSON(filepath.Join(dir, "faults.json"), []Fault{}))
	must(writeJSON(filepath.Join(dir, "incarnations.json"), []Incarnation{}))
	var lines []byte
	for _, r := range append(append([]Record{}, a...), b...) {
		j, err := json.Marshal(r)
		must(err)
		lines = append(append(lines, j...), '\n')
	}
	must(os.WriteFile(filepath.Join(dir, "r0.jsonl"), lines, 0o600))
	// In the store, r1.1's first entry landed before r0.1's last.
	aa, bb := stored(a), stored(b)
	must(writeJSON(filepath.Join(dir, effectsFile), map[string][]string{"a": append(append(append(aa[:19:19], bb[0]), aa[19]), bb[1:]...)}))
	rep, err := Recheck(dir, 0)
	must(err)
	if rep.OK() || len(rep.StaleAccepted) != 1 || rep.Effects.Stored != 56 {
		t.Fatalf("recheck with saved effects: stored %d\n%s", rep.Effects.Stored, rep.Summary())
	}
	must(os.WriteFile(filepath.Join(dir, effectsFile), []byte("{"), 0o600))
	if _, err := Recheck(dir, 0); err == nil || !strings.Contains(err.Error(), effectsFile) {
		t.Fatalf("a broken %s: err = %v, want one naming it", effectsFile, err)
	}
}
