package main

import (
	"encoding/json"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// writeJSON writes v as indented JSON, one document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newTable returns a tabwriter for people: columns padded by two spaces,
// like kubectl's. Write rows with tab-separated cells; Flush at the end.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// dash shows an absent value.
const dash = "-"

// showDuration rounds d for a table: microseconds below a millisecond,
// milliseconds below ten seconds, tenths of a second above.
func showDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return dash
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < 10*time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}

// showUint shows n, or a dash for 0.
func showUint(n uint64) string {
	if n == 0 {
		return dash
	}
	return strconv.FormatUint(n, 10)
}

// showString shows s, or a dash for "".
func showString(s string) string {
	if s == "" {
		return dash
	}
	return s
}

// showTime shows t in UTC to the millisecond, or a dash.
func showTime(t time.Time) string {
	if t.IsZero() {
		return dash
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
