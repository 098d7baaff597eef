package jobrecord

import (
	"fmt"
	"strconv"
	"time"
)

// Record is one job's slot state: what Claim, Complete and Pause decide
// on. Its zero value is a job with nothing stored.
type Record struct {
	// Slot is the latest recorded slot (Unix ms); HasSlot is false when
	// none is.
	Slot    int64
	HasSlot bool
	// Open is the slot of the latest claim that has not completed; 0 when
	// none.
	Open int64
	// Running is true while the open claim's attempt has not reported its
	// end.
	Running bool
	// Attempt and Term are those of the latest granted claim.
	Attempt int
	Term    string
	// Until is when, on the store's clock (Unix ms), the latest claiming
	// term has certainly ended unless it reported its end first.
	Until int64
	// Paused reports whether the job is paused (S10).
	Paused bool
	// Seq is how many run records were ever written; record seq lives at
	// ring index (seq-1) % JobHistoryLen.
	Seq int64
}

// The field names of an encoded Record. They are those the Redis provider
// has always written in a job's hash, so its existing keys, and the rows
// of pglock's existing job table, read as records unchanged (V2). A name
// must not have the form of a ring entry ("h" and digits).
const (
	fieldSlot   = "slot"
	fieldOpen   = "open"
	fieldRun    = "run"
	fieldAtt    = "att"
	fieldTerm   = "term"
	fieldUntil  = "until"
	fieldPaused = "paused"
	fieldSeq    = "seq"
)

// Fields returns r encoded as named fields, as a RecordStore stores it:
// decimal integers, "1" for true, and a field left out where r holds its
// zero value.
func (r Record) Fields() map[string]string {
	f := make(map[string]string, 8)
	num := func(name string, v int64) {
		if v != 0 {
			f[name] = strconv.FormatInt(v, 10)
		}
	}
	if r.HasSlot {
		f[fieldSlot] = strconv.FormatInt(r.Slot, 10)
	}
	if r.Open != 0 {
		f[fieldOpen] = strconv.FormatInt(r.Open, 10)
		f[fieldRun] = "0"
		if r.Running {
			f[fieldRun] = "1"
		}
	}
	num(fieldAtt, int64(r.Attempt))
	if r.Term != "" {
		f[fieldTerm] = r.Term
	}
	num(fieldUntil, r.Until)
	if r.Paused {
		f[fieldPaused] = "1"
	}
	num(fieldSeq, r.Seq)
	return f
}

// Decode parses fields as Fields wrote them (or as the Redis provider's
// scripts wrote them before records were decided in Go). Fields it does
// not know are ignored; an integer field that is not a non-negative
// integer is an error naming it.
func Decode(fields map[string]string) (Record, error) {
	var r Record
	num := func(name string) (int64, bool, error) {
		s, ok := fields[name]
		if !ok {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, false, fmt.Errorf("job field %s %q is not an integer", name, s)
		}
		return n, true, nil
	}
	var err error
	if r.Slot, r.HasSlot, err = num(fieldSlot); err != nil {
		return Record{}, err
	}
	if r.Open, _, err = num(fieldOpen); err != nil {
		return Record{}, err
	}
	att, _, err := num(fieldAtt)
	if err != nil {
		return Record{}, err
	}
	r.Attempt = int(att)
	if r.Until, _, err = num(fieldUntil); err != nil {
		return Record{}, err
	}
	if r.Seq, _, err = num(fieldSeq); err != nil {
		return Record{}, err
	}
	r.Running = r.Open != 0 && fields[fieldRun] == "1"
	r.Term = fields[fieldTerm]
	r.Paused = fields[fieldPaused] == "1"
	return r, nil
}

// waitFor is how long after now the open attempt's term has certainly
// ended; 0 when it has or when the attempt reported its end.
func (r Record) waitFor(now time.Time) time.Duration {
	if !r.Running {
		return 0
	}
	return max(time.UnixMilli(r.Until).Sub(now), 0)
}

// untilMillis is now+hold in Unix ms, rounded down as the store's
// clock is read in whole milliseconds: a wait computed from it is never
// longer than the hold.
func untilMillis(now time.Time, hold time.Duration) int64 {
	return now.Add(hold).UnixMilli()
}

// RingIndex is where run record seq lives in a job's history ring.
func RingIndex(seq int64) int {
	return int((seq - 1) % JobHistoryLen)
}
