package chaos

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Record kinds written by the replica program, one JSON object per line.
const (
	// KindStart opens an incarnation: the replica process started.
	KindStart = "start"
	// KindWork is one slice of leader-only work for a role, written after
	// the slice ended.
	KindWork = "work"
	// KindExit closes an incarnation that shut down gracefully; it carries
	// the goroutine count after every elector stopped.
	KindExit = "exit"
)

// Outcomes of a fenced effect (Record.Effect).
const (
	// EffectAccepted: the gate admitted the fence and appended the entry.
	EffectAccepted = "accepted"
	// EffectStale: the gate refused the fence (fencing.ErrStale); nothing
	// was written.
	EffectStale = "stale"
	// EffectErrorPrefix starts the outcome of a write whose reply was an
	// error: it may or may not have been applied.
	EffectErrorPrefix = "error: "
)

// Record is one line of a replica's history file. Wall-clock times are Unix
// nanoseconds (all processes run on one machine, so they share the clock);
// Mono* are monotonic offsets in nanoseconds since the incarnation started,
// which let the checker notice wall-clock jumps.
type Record struct {
	Kind     string `json:"kind"`
	Replica  int    `json:"replica"`
	Identity string `json:"id"` // replica and incarnation, e.g. "r2.3"
	PID      int    `json:"pid,omitempty"`

	// Work records.
	Role      string `json:"role,omitempty"`
	Term      uint64 `json:"term,omitempty"`
	Start     int64  `json:"start,omitempty"`
	End       int64  `json:"end,omitempty"`
	MonoStart int64  `json:"mono_start,omitempty"`
	MonoEnd   int64  `json:"mono_end,omitempty"`
	// Checked is when leadership.Assert returned nil for this slice (wall
	// clock, Unix ns): the instant of the slice's Assert-checked effect.
	// Start was taken just before the call.
	Checked int64 `json:"checked,omitempty"`
	// Fence is the term's fence (leadership.FenceFrom of the Token).
	Fence uint64 `json:"fence,omitempty"`
	// Seq numbers the slices of one incarnation and role from 1; the
	// fenced effect's store entry carries it (see EffectEntry).
	Seq uint64 `json:"seq,omitempty"`
	// Effect is the outcome of the slice's fenced effect, written through
	// the fencing gate after the slice ended: EffectAccepted,
	// EffectStale, or "error: ..." (outcome unknown).
	Effect string `json:"effect,omitempty"`
	// EffectAt and EffectDone bound the fenced write on the wall clock.
	EffectAt   int64 `json:"effect_at,omitempty"`
	EffectDone int64 `json:"effect_done,omitempty"`

	// Exit records.
	Goroutines int    `json:"goroutines,omitempty"`
	Baseline   int    `json:"baseline,omitempty"`
	Leaked     string `json:"leaked,omitempty"` // goroutine dump when leaked
}

// StartTime is the record's start on the wall clock.
func (r Record) StartTime() time.Time { return time.Unix(0, r.Start) }

// EndTime is the record's end on the wall clock.
func (r Record) EndTime() time.Time { return time.Unix(0, r.End) }

// ReadRecords reads one history file. A torn last line (the process was
// killed while writing it) is ignored; any other malformed line is an error
// naming the file and line.
func ReadRecords(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("chaos: read history: %w", err)
	}
	defer f.Close()
	return readRecords(f, path)
}

func readRecords(r io.Reader, name string) ([]Record, error) {
	var out []Record
	br := bufio.NewReaderSize(r, 64*1024)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 && b[len(b)-1] == '\n' {
			var rec Record
			if jerr := json.Unmarshal(b, &rec); jerr != nil {
				return nil, fmt.Errorf("chaos: %s line %d: %w", name, line, jerr)
			}
			out = append(out, rec)
		} else if len(b) > 0 && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("chaos: %s line %d: %w", name, line, err)
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("chaos: %s line %d: %w", name, line, err)
		}
	}
}

// ReadDir reads every "*.jsonl" history file under dir, sorted by start
// time.
func ReadDir(dir string) ([]Record, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("chaos: history files: %w", err)
	}
	var all []Record
	for _, p := range paths {
		recs, err := ReadRecords(p)
		if err != nil {
			return nil, err
		}
		all = append(all, recs...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Start < all[j].Start })
	return all, nil
}

// RoleName is the name of the i-th role of a run: "role-00", "role-01"...
func RoleName(i int) string { return fmt.Sprintf("role-%02d", i) }

// EffectEntry is one entry of a role's effect log in the effects store:
// the fenced effect of one work slice, as the gate appended it.
type EffectEntry struct {
	Identity string
	Term     uint64
	Fence    uint64
	Seq      uint64
}

// String is the entry as stored: "identity term fence seq".
func (e EffectEntry) String() string {
	return fmt.Sprintf("%s %d %d %d", e.Identity, e.Term, e.Fence, e.Seq)
}

// ParseEffectEntry parses a stored entry; an entry that does not parse is
// an error quoting it.
func ParseEffectEntry(s string) (EffectEntry, error) {
	f := strings.Fields(s)
	if len(f) != 4 {
		return EffectEntry{}, fmt.Errorf("chaos: effect entry %q: want \"identity term fence seq\"", s)
	}
	var e EffectEntry
	var err [3]error
	e.Identity = f[0]
	e.Term, err[0] = strconv.ParseUint(f[1], 10, 64)
	e.Fence, err[1] = strconv.ParseUint(f[2], 10, 64)
	e.Seq, err[2] = strconv.ParseUint(f[3], 10, 64)
	if jerr := errors.Join(err[:]...); jerr != nil {
		return EffectEntry{}, fmt.Errorf("chaos: effect entry %q: %w", s, jerr)
	}
	return e, nil
}
