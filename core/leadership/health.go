package leadership

import (
	"fmt"
	"time"
)

// Check reports the elector's health for liveness and readiness endpoints,
// with the tolerance of CheckWithin set to RetryInterval+RenewInterval.
func (e *Elector) Check() error {
	return e.CheckWithin(e.opts.RetryInterval + e.opts.RenewInterval)
}

// CheckWithin reports an error when the running elector is unhealthy:
//
//   - it believes it leads more than tolerance past its local lease
//     deadline (work could still be holding on past a lost lease), or
//   - its loop made no progress for more than tolerance beyond the wait it
//     scheduled (the loop is wedged, e.g. in a lock call that ignores its
//     context).
//
// A stopped or not yet started elector is healthy. CheckWithin does no I/O.
func (e *Elector) CheckWithin(tolerance time.Duration) error {
	if !e.running.Load() {
		return nil
	}
	now := time.Now()
	if s := e.state.Load(); s.leader && now.After(s.deadline.Add(tolerance)) {
		return fmt.Errorf("leadership: role %q: leads %v past its lease deadline", e.role, now.Sub(s.deadline))
	}
	if p := e.progress.Load(); p != nil && now.After(p.at.Add(p.wait+tolerance)) {
		return fmt.Errorf("leadership: role %q: election loop made no progress for %v (scheduled wait %v)", e.role, now.Sub(p.at), p.wait)
	}
	return nil
}
