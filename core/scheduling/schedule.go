package scheduling

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"
)

// Schedule decides when a job's slots fall due. A slot is identified by its
// scheduled time: every replica computes the same slots from the same
// Schedule, which is what makes once-per-slot records (WithSlotStore)
// comparable across replicas.
//
// Every and Cron build the schedules of this package; a custom Schedule is
// accepted too, provided its Next is deterministic (the same answer on
// every replica for the same input).
type Schedule interface {
	// Next returns the first slot strictly after t, or the zero time when
	// the schedule has no further slot.
	Next(t time.Time) time.Time
	// String describes the schedule for logs and Jobs.
	String() string
}

// InLocation returns s with loc as the time zone of a cron expression that
// does not name one, which is what Scheduler.Add does with WithLocation.
// Other schedules, and a nil loc, return s unchanged.
func InLocation(s Schedule, loc *time.Location) Schedule {
	if b, ok := s.(locator); ok && loc != nil {
		return b.in(loc)
	}
	return s
}

// ScheduleSpec returns text that describes s and that Cron parses back
// into the same slots, for the schedules of this package: "@every 15m0s"
// for Every, and for a cron expression the expression, led by
// "CRON_TZ=<zone> " when it named no zone of its own (the zone it was
// bound to, see InLocation). The scheduler keeps it in every run record
// (RunRecord.Schedule). For any other Schedule it returns s.String() and
// ok false: its slots cannot be computed from text.
func ScheduleSpec(s Schedule) (spec string, ok bool) {
	switch v := s.(type) {
	case every:
		return "@every " + v.d.String(), true
	case *cronSchedule:
		if v == nil {
			return "", false
		}
		if v.zoned {
			return v.expr, true
		}
		return "CRON_TZ=" + v.spec.Location.String() + " " + strings.TrimSpace(v.expr), true
	case nil:
		return "", false
	}
	return s.String(), false
}

// checker is implemented by this package's schedules: Add calls it so that
// an invalid schedule is rejected when the job is added, never at run time.
type checker interface {
	check() error
}

// locator is implemented by schedules whose slots depend on a time zone
// and that did not name one themselves: Add binds them to the scheduler's
// location (WithLocation).
type locator interface {
	in(loc *time.Location) Schedule
}

// Every returns a schedule whose slots are the multiples of d counted from
// time.Time's zero instant (0001-01-01 00:00:00 UTC), exactly: d is not
// rounded. For a d that divides 24 hours this is the UTC clock:
// Every(15*time.Minute) falls due at :00, :15, :30 and :45 UTC on every
// replica, whenever each one started. The scheduler's location does not
// apply.
//
// A d of zero or less is not rejected here but by Scheduler.Add, with an
// error naming the job and d.
func Every(d time.Duration) Schedule {
	return every{d: d}
}

type every struct{ d time.Duration }

func (e every) Next(t time.Time) time.Time {
	if e.d <= 0 {
		return time.Time{}
	}
	return t.Truncate(e.d).Add(e.d)
}

func (e every) String() string { return "every " + e.d.String() }

func (e every) check() error {
	if e.d <= 0 {
		return fmt.Errorf("interval %v must be positive", e.d)
	}
	return nil
}

// slotsBetween counts the slots strictly between a and b.
func (e every) slotsBetween(a, b time.Time) int64 {
	if e.d <= 0 || !a.Before(b) {
		return 0
	}
	first := e.Next(a)
	if !first.Before(b) {
		return 0
	}
	last := b.Add(-1).Truncate(e.d) // the last slot before b
	return int64(last.Sub(first)/e.d) + 1
}

// parserOptions accept the standard five fields (minute first), an
// optional leading seconds field, and descriptors (@hourly, @daily, ...).
const parserOptions = cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor

// Cron parses a cron expression:
//
//   - five fields, minute first: "*/5 * * * *" (minute, hour, day of month,
//     month, day of week);
//   - six fields, a leading seconds field: "30 */5 * * * *";
//   - descriptors: @yearly (@annually), @monthly, @weekly, @daily
//     (@midnight), @hourly, and "@every <duration>" (Go duration syntax,
//     "@every 90s"), which is Every(duration): exact and aligned, see Every;
//   - an optional time zone prefix, "CRON_TZ=Europe/Berlin 0 3 * * *" (TZ=
//     is accepted too). Without one, the scheduler's location applies
//     (WithLocation; default UTC), and Next on the returned value uses UTC.
//
// Fields are parsed by github.com/robfig/cron/v3, the parser Kubernetes
// CronJob and gocron v2 use. The error names the expression.
//
// Across daylight-saving changes a slot is a wall-clock time in the
// schedule's zone: a wall time that does not exist that day (02:30 when
// clocks jump from 02:00 to 03:00) has no slot that day; a wall time that
// occurs twice (01:30 when clocks fall back) has one slot, its first
// occurrence, unless the hour field is "*" (every hour): then each of the
// two hours is its own slot, as they are distinct hours.
func Cron(expr string) (Schedule, error) {
	s, err := parseCron(expr)
	if err != nil {
		return nil, fmt.Errorf("scheduling: cron expression %q: %w", expr, err)
	}
	return s, nil
}

func parseCron(expr string) (Schedule, error) {
	spec := strings.TrimSpace(expr)
	if spec == "" {
		return nil, fmt.Errorf("empty")
	}
	var loc *time.Location
	if rest, ok := cutTZ(spec); ok {
		i := strings.IndexFunc(rest, unicode.IsSpace)
		if i < 0 {
			return nil, fmt.Errorf("time zone %q is not followed by a schedule", rest)
		}
		name := rest[:i]
		if name == "" {
			return nil, fmt.Errorf("empty time zone")
		}
		l, err := time.LoadLocation(name)
		if err != nil {
			return nil, fmt.Errorf("unknown time zone %q: %w", name, err)
		}
		loc = l
		spec = strings.TrimSpace(rest[i:])
	}
	if d, ok := strings.CutPrefix(spec, "@every"); ok && (d == "" || unicode.IsSpace(rune(d[0]))) {
		iv, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil {
			return nil, fmt.Errorf("@every: %w", err)
		}
		if iv <= 0 {
			return nil, fmt.Errorf("@every interval %v must be positive", iv)
		}
		return every{d: iv}, nil
	}
	parsed, err := parse(spec)
	if err != nil {
		return nil, err
	}
	ss, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("unsupported schedule type %T", parsed)
	}
	c := &cronSchedule{expr: expr, spec: *ss, zoned: loc != nil}
	if loc == nil {
		loc = time.UTC
	}
	c.spec.Location = loc
	return c, nil
}

// parse calls the cron parser and turns a panic into an error: the parser
// is third-party code and bad input must never panic.
func parse(spec string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("unparsable: %v", r)
		}
	}()
	return cron.NewParser(parserOptions).Parse(spec)
}

func cutTZ(spec string) (string, bool) {
	if rest, ok := strings.CutPrefix(spec, "CRON_TZ="); ok {
		return rest, true
	}
	return strings.CutPrefix(spec, "TZ=")
}

// cronSchedule is a parsed cron expression.
type cronSchedule struct {
	expr  string
	spec  cron.SpecSchedule
	zoned bool // the expression named its time zone
}

// allHours is the hour field of an expression that matches every hour.
const allHours = 1<<24 - 1

func (c *cronSchedule) Next(t time.Time) time.Time {
	if c == nil {
		return time.Time{}
	}
	loc := c.spec.Location
	n := c.spec.Next(t.In(loc))
	if n.IsZero() {
		return n
	}
	n = n.In(loc)
	if c.spec.Hour&allHours == allHours {
		return n
	}
	// A wall time that occurs twice (clocks fall back) has one slot: its
	// first occurrence. The cron library yields both; skip the repeat.
	for i := 0; i < 4 && !n.IsZero() && repeatedWallTime(n); i++ {
		n = c.spec.Next(n)
		if !n.IsZero() {
			n = n.In(loc)
		}
	}
	return n
}

// repeatedWallTime reports whether t's wall-clock time in its location
// already occurred earlier, because clocks were set back shortly before t.
func repeatedWallTime(t time.Time) bool {
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return false
	}
	_, now := t.Zone()
	_, before := start.Add(-time.Nanosecond).Zone()
	back := time.Duration(before-now) * time.Second
	return back > 0 && t.Before(start.Add(back))
}

func (c *cronSchedule) String() string {
	if c == nil {
		return "<nil>"
	}
	if c.zoned {
		return c.expr
	}
	return c.expr + " (" + c.spec.Location.String() + ")"
}

func (c *cronSchedule) check() error {
	if c == nil {
		return fmt.Errorf("nil cron schedule")
	}
	return nil
}

func (c *cronSchedule) in(loc *time.Location) Schedule {
	if c.zoned || loc == nil {
		return c
	}
	d := *c
	d.spec.Location = loc
	return &d
}
