package leadership

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// The expiry timer ends a term at its deadline, so a leader past its
// deadline cannot be produced through the API; set the state directly.
func TestElector_Check_LeadsPastDeadline(t *testing.T) {
	lock, err := locking.New(memlock.New(), locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewElector("r", lock, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	token, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.running.Store(true)
	e.progress.Store(&loopProgress{at: time.Now(), wait: time.Hour})
	e.state.Store(&termState{leader: true, term: 1, token: token, deadline: time.Now().Add(-10 * time.Second)})
	err = e.CheckWithin(time.Second)
	if err == nil || !strings.Contains(err.Error(), `leadership: role "r": leads`) || !strings.Contains(err.Error(), "past its lease deadline") {
		t.Fatalf("CheckWithin = %v, want leads past its deadline", err)
	}
	if err := e.CheckWithin(time.Minute); err != nil {
		t.Fatalf("within tolerance: %v", err)
	}
}
