package scheduling_test

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // named zones independent of the machine's zoneinfo

	"github.com/hostloom/hostloom/core/scheduling"
)

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustCron(t *testing.T, expr string) scheduling.Schedule {
	t.Helper()
	s, err := scheduling.Cron(expr)
	if err != nil {
		t.Fatalf("Cron(%q): %v", expr, err)
	}
	return s
}

// nexts returns n successive slots after from.
func nexts(s scheduling.Schedule, from time.Time, n int) []time.Time {
	out := make([]time.Time, 0, n)
	for t := from; len(out) < n; {
		t = s.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out
}

func TestEvery_ExactAndAligned(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 7, 3, 500, time.UTC)
	tests := []struct {
		d    time.Duration
		want []time.Time
	}{
		{15 * time.Minute, []time.Time{
			time.Date(2026, 5, 1, 10, 15, 0, 0, time.UTC),
			time.Date(2026, 5, 1, 10, 30, 0, 0, time.UTC),
		}},
		{1500 * time.Millisecond, []time.Time{
			time.Date(2026, 5, 1, 10, 7, 4, 500_000_000, time.UTC),
			time.Date(2026, 5, 1, 10, 7, 6, 0, time.UTC),
		}},
		{time.Hour, []time.Time{
			time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC),
			time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
		}},
	}
	for _, tt := range tests {
		got := nexts(scheduling.Every(tt.d), at, len(tt.want))
		for i := range tt.want {
			if !got[i].Equal(tt.want[i]) {
				t.Errorf("Every(%v) slot %d = %v, want %v", tt.d, i, got[i], tt.want[i])
			}
		}
		// Strictly after: a slot time itself yields the following slot.
		if n := scheduling.Every(tt.d).Next(tt.want[0]); !n.Equal(tt.want[1]) {
			t.Errorf("Every(%v).Next(slot) = %v, want %v", tt.d, n, tt.want[1])
		}
	}
	// The zone of the input does not move the slots.
	berlin := mustLoad(t, "Europe/Berlin")
	if n := scheduling.Every(15 * time.Minute).Next(at.In(berlin)); !n.Equal(time.Date(2026, 5, 1, 10, 15, 0, 0, time.UTC)) {
		t.Errorf("Every in Berlin = %v", n)
	}
}

func TestCron_Forms(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 7, 3, 0, time.UTC) // a Friday
	tests := []struct {
		expr string
		want []time.Time
	}{
		{"*/5 * * * *", []time.Time{time.Date(2026, 5, 1, 10, 10, 0, 0, time.UTC), time.Date(2026, 5, 1, 10, 15, 0, 0, time.UTC)}},
		{"30 */5 * * * *", []time.Time{time.Date(2026, 5, 1, 10, 10, 30, 0, time.UTC), time.Date(2026, 5, 1, 10, 15, 30, 0, time.UTC)}},
		{"@hourly", []time.Time{time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC), time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}},
		{"@daily", []time.Time{time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC)}},
		{"0 9 * * MON-FRI", []time.Time{time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC), time.Date(2026, 5, 5, 9, 0, 0, 0, time.UTC)}},
		{"@every 90s", []time.Time{time.Date(2026, 5, 1, 10, 7, 30, 0, time.UTC), time.Date(2026, 5, 1, 10, 9, 0, 0, time.UTC)}},
		{"@every 1500ms", []time.Time{time.Date(2026, 5, 1, 10, 7, 4, 500_000_000, time.UTC), time.Date(2026, 5, 1, 10, 7, 6, 0, time.UTC)}},
		{"CRON_TZ=Europe/Berlin 0 3 * * *", []time.Time{time.Date(2026, 5, 2, 1, 0, 0, 0, time.UTC), time.Date(2026, 5, 3, 1, 0, 0, 0, time.UTC)}},
		{"TZ=America/New_York 0 3 * * *", []time.Time{time.Date(2026, 5, 2, 7, 0, 0, 0, time.UTC), time.Date(2026, 5, 3, 7, 0, 0, 0, time.UTC)}},
	}
	for _, tt := range tests {
		got := nexts(mustCron(t, tt.expr), at, len(tt.want))
		if len(got) != len(tt.want) {
			t.Fatalf("%q: %d slots, want %d", tt.expr, len(got), len(tt.want))
		}
		for i := range tt.want {
			if !got[i].Equal(tt.want[i]) {
				t.Errorf("%q slot %d = %v, want %v", tt.expr, i, got[i].UTC(), tt.want[i])
			}
		}
	}
}

func TestCron_S6_RejectsNamingTheExpression(t *testing.T) {
	for _, expr := range []string{
		"",
		"   ",
		"* * *",
		"61 * * * *",
		"* * * * * * *",
		"@fortnightly",
		"@every",
		"@every soon",
		"@every 0s",
		"@every -5m",
		"CRON_TZ=Mars/Olympus 0 3 * * *",
		"TZ=Europe/Berlin",       // a zone without a schedule
		"CRON_TZ= 0 3 * * *",     // an empty zone
		"TZ=Europe/Berlin\t@bad", // a bad descriptor after a zone
	} {
		s, err := scheduling.Cron(expr)
		if err == nil {
			t.Errorf("Cron(%q) = %v, want an error", expr, s)
			continue
		}
		if s != nil {
			t.Errorf("Cron(%q) returned a schedule with its error", expr)
		}
		if !strings.Contains(err.Error(), "scheduling: cron expression") || !strings.Contains(err.Error(), strings.ReplaceAll(expr, "\t", `\t`)) {
			t.Errorf("Cron(%q) error %q does not name the expression", expr, err)
		}
	}
	_, err := scheduling.Cron("CRON_TZ=Mars/Olympus 0 3 * * *")
	if !strings.Contains(err.Error(), `unknown time zone "Mars/Olympus"`) {
		t.Errorf("unknown zone error = %q", err)
	}
}

// TestCron_DST checks slots across daylight-saving changes in named zones:
// a wall time that does not exist that day has no slot, a wall time that
// occurs twice has one (its first occurrence), and an every-hour
// expression has a slot in each absolute hour.
func TestCron_DST(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	berlin := mustLoad(t, "Europe/Berlin")
	utc := func(y int, mo time.Month, d, h, mi int) time.Time { return time.Date(y, mo, d, h, mi, 0, 0, time.UTC) }
	tests := []struct {
		name string
		expr string
		from time.Time
		want []time.Time
	}{{
		// 2026-03-08 02:00 EST → 03:00 EDT: 02:30 does not exist.
		name: "new york spring forward skips the missing wall time",
		expr: "CRON_TZ=America/New_York 30 2 * * *",
		from: time.Date(2026, 3, 7, 12, 0, 0, 0, ny),
		want: []time.Time{utc(2026, 3, 9, 6, 30), utc(2026, 3, 10, 6, 30)},
	}, {
		name: "new york spring forward, 03:30 exists",
		expr: "CRON_TZ=America/New_York 30 3 * * *",
		from: time.Date(2026, 3, 7, 12, 0, 0, 0, ny),
		want: []time.Time{utc(2026, 3, 8, 7, 30), utc(2026, 3, 9, 7, 30)},
	}, {
		// 2026-11-01 02:00 EDT → 01:00 EST: 01:30 occurs twice.
		name: "new york fall back runs a repeated wall time once",
		expr: "CRON_TZ=America/New_York 30 1 * * *",
		from: time.Date(2026, 10, 31, 12, 0, 0, 0, ny),
		want: []time.Time{utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30), utc(2026, 11, 3, 6, 30)},
	}, {
		name: "new york fall back, hourly has a slot in both 01:00 hours",
		expr: "CRON_TZ=America/New_York 0 * * * *",
		from: time.Date(2026, 11, 1, 0, 30, 0, 0, ny),
		want: []time.Time{utc(2026, 11, 1, 5, 0), utc(2026, 11, 1, 6, 0), utc(2026, 11, 1, 7, 0), utc(2026, 11, 1, 8, 0)},
	}, {
		name: "new york fall back, every 30 minutes keeps its cadence",
		expr: "CRON_TZ=America/New_York */30 * * * *",
		from: time.Date(2026, 11, 1, 0, 50, 0, 0, ny),
		want: []time.Time{utc(2026, 11, 1, 5, 0), utc(2026, 11, 1, 5, 30), utc(2026, 11, 1, 6, 0), utc(2026, 11, 1, 6, 30), utc(2026, 11, 1, 7, 0)},
	}, {
		// 2026-03-29 02:00 CET → 03:00 CEST.
		name: "berlin spring forward, hourly jumps the missing hour",
		expr: "0 * * * *",
		from: time.Date(2026, 3, 29, 0, 30, 0, 0, berlin),
		want: []time.Time{utc(2026, 3, 29, 0, 0), utc(2026, 3, 29, 1, 0), utc(2026, 3, 29, 2, 0)},
	}, {
		// 2026-10-25 03:00 CEST → 02:00 CET: 02:15 occurs twice.
		name: "berlin fall back via the scheduler location",
		expr: "15 2 * * *",
		from: time.Date(2026, 10, 24, 12, 0, 0, 0, berlin),
		want: []time.Time{utc(2026, 10, 25, 0, 15), utc(2026, 10, 26, 1, 15)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCron(t, tt.expr)
			if !strings.HasPrefix(tt.expr, "CRON_TZ=") {
				s = scheduling.InLocation(s, berlin)
			}
			got := nexts(s, tt.from, len(tt.want))
			for i := range tt.want {
				if i >= len(got) || !got[i].Equal(tt.want[i]) {
					t.Fatalf("slots = %v, want %v", utcs(got), tt.want)
				}
			}
		})
	}
}

func utcs(ts []time.Time) []time.Time {
	out := make([]time.Time, len(ts))
	for i, t := range ts {
		out[i] = t.UTC()
	}
	return out
}

// opaqueSchedule is a Schedule of no kind this package knows.
type opaqueSchedule struct{}

func (opaqueSchedule) Next(t time.Time) time.Time { return t.Add(time.Hour) }
func (opaqueSchedule) String() string             { return "hourly, my way" }

// TestScheduleSpec_S11_ParsesBackToTheSameSlots: the text kept in run
// records reads back, through Cron, into a schedule with the same slots,
// the zone a cron expression was bound to included; a custom schedule is
// described but not claimed to parse.
func TestScheduleSpec_S11_ParsesBackToTheSameSlots(t *testing.T) {
	berlin := mustLoad(t, "Europe/Berlin")
	mustCron := func(expr string) scheduling.Schedule {
		s, err := scheduling.Cron(expr)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		sched scheduling.Schedule
		want  string
	}{
		{"every", scheduling.Every(15 * time.Minute), "@every 15m0s"},
		{"cron in UTC", mustCron("0 3 * * *"), "CRON_TZ=UTC 0 3 * * *"},
		{"cron bound to a zone", scheduling.InLocation(mustCron("30 2 * * *"), berlin), "CRON_TZ=Europe/Berlin 30 2 * * *"},
		{"cron naming its zone", mustCron("CRON_TZ=America/New_York @daily"), "CRON_TZ=America/New_York @daily"},
		{"descriptor", mustCron("@hourly"), "CRON_TZ=UTC @hourly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, ok := scheduling.ScheduleSpec(tc.sched)
			if !ok || spec != tc.want {
				t.Fatalf("ScheduleSpec = %q, %v; want %q, true", spec, ok, tc.want)
			}
			back := mustCron(spec)
			at := time.Date(2026, 3, 28, 22, 7, 0, 0, time.UTC) // across Berlin's spring change
			for range 50 {
				want, got := tc.sched.Next(at), back.Next(at)
				if !want.Equal(got) {
					t.Fatalf("after %v: Next = %v, parsed back %v", at, want, got)
				}
				at = want
			}
		})
	}
	if spec, ok := scheduling.ScheduleSpec(opaqueSchedule{}); ok || spec != "hourly, my way" {
		t.Errorf("custom: ScheduleSpec = %q, %v; want its String and false", spec, ok)
	}
	if spec, ok := scheduling.ScheduleSpec(nil); ok || spec != "" {
		t.Errorf("nil: ScheduleSpec = %q, %v", spec, ok)
	}
}
