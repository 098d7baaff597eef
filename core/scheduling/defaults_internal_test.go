package scheduling

import (
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/locking"
)

// reporting is a Leadership that reports its identity and lease, as a
// *leadership.Elector does, without being one.
type reporting struct {
	*leadershiptest.Fake
	id    string
	lease time.Duration
}

func (r reporting) Identity() string     { return r.id }
func (r reporting) Lease() time.Duration { return r.lease }

// TestNew_DefaultsFromLeadership: identity and recovery hold come from the
// options first, then from a Leadership that reports them, then from the
// package defaults.
func TestNew_DefaultsFromLeadership(t *testing.T) {
	fake := leadershiptest.NewFake("r")
	rep := reporting{Fake: fake, id: "replica-7", lease: 3 * time.Second}
	for _, tt := range []struct {
		name string
		l    leadership.Leadership
		opts []Option
		id   string
		hold time.Duration
	}{
		{"reported", rep, nil, "replica-7", 3 * time.Second},
		{"options win", rep, []Option{WithIdentity("x"), WithRecoveryHold(time.Minute)}, "x", time.Minute},
		{"not reported", fake, nil, locking.DefaultOwner(), leadership.DefaultLease},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.l, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if s.id != tt.id || s.hold != tt.hold {
				t.Errorf("identity, hold = %q, %v; want %q, %v", s.id, s.hold, tt.id, tt.hold)
			}
		})
	}
}
