package main

import (
	"strings"
	"testing"
	"time"
)

// client-go can take over before the lease its predecessor last renewed
// has run out (its record's RenewTime has one-second precision), so a
// failover made only of negative takeovers is a measurement, not a broken
// harness; a section that counted nothing still is.
func TestReport_SaneAcceptsNegativeFailoversButNotEmptyOnes(t *testing.T) {
	neg := summarize([]time.Duration{-442 * time.Millisecond, -68 * time.Millisecond})
	r := &report{failover: []electionResult{{Lib: "client-go", Set: fastSettings, S: neg}}}
	if err := r.sane(); err != nil {
		t.Fatalf("negative takeovers rejected: %v", err)
	}
	r.failover = append(r.failover, electionResult{Lib: "hostloom", Set: fastSettings})
	r.handover = []electionResult{{Lib: "hostloom", Set: fastSettings}}
	err := r.sane()
	if err == nil {
		t.Fatal("empty failover and handover accepted")
	}
	for _, want := range []string{"failover hostloom", "handover hostloom"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
