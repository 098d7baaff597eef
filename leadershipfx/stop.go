package leadershipfx

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// beginStop starts stopping every role, each on its own goroutine, once.
func (r *Roles) beginStop() []*role {
	r.running.Store(false)
	rs := r.roles()
	for _, ro := range rs {
		ro.stopOnce.Do(func() { go ro.stop(r.log) })
	}
	return rs
}

// stopAll is the last hook's OnStop, the first to run: every role stops
// in parallel; it returns once each has released its lease or been named
// as stuck, so the rest of the app stops without waiting for stuck work.
func (r *Roles) stopAll(ctx context.Context) error {
	for _, ro := range r.beginStop() {
		select {
		case <-ro.settled:
		case <-ctx.Done():
			return r.stuckError(ctx)
		}
	}
	return nil
}

// awaitReleased is the first hook's OnStop, the last of HostLoom's to
// run (it also stops the roles when a failed start skipped stopAll): it
// waits until every role has released its lease, or ctx ends.
func (r *Roles) awaitReleased(ctx context.Context) error {
	var errs []error
	for _, ro := range r.beginStop() {
		select {
		case <-ro.released:
			if ro.stopErr != nil {
				errs = append(errs, roleError(ro.name, ro.stopErr))
			}
		case <-ctx.Done():
			return r.stuckError(ctx)
		}
	}
	return errors.Join(errs...)
}

// stuckError logs and returns what keeps a role's lease when the stop ctx
// has ended.
func (r *Roles) stuckError(ctx context.Context) error {
	var errs []error
	for _, ro := range r.roles() {
		errs = append(errs, ro.stuck(r.log))
	}
	return fmt.Errorf("%w: %w", ctx.Err(), errors.Join(errs...))
}

// stuck logs and returns what keeps the role's lease (nil once released).
func (ro *role) stuck(log *zap.Logger) error {
	select {
	case <-ro.released:
		return nil
	default:
	}
	now := time.Now()
	var names []string
	for _, a := range ro.running() {
		names = append(names, fmt.Sprintf("%s %q running for %v", a.Kind, a.Name, now.Sub(a.Since).Round(time.Millisecond)))
	}
	if len(names) == 0 {
		// The work has returned; the release itself has not finished.
		return fmt.Errorf("leadershipfx: role %s: %w", quoteRole(ro.name), errStillReleasing)
	}
	log.Error("LeaseKeptForRunningWork", zap.String("role", ro.name), zap.Strings("running", names))
	return fmt.Errorf("leadershipfx: role %s keeps its lease until its work returns or the process exits: %s",
		quoteRole(ro.name), strings.Join(names, ", "))
}

// running lists the role's running activities.
func (ro *role) running() []Activity {
	var out []Activity
	for _, w := range ro.works() {
		out = append(out, w.Running()...)
	}
	return out
}

// stop cancels the role's work, waits for it and then stops the elector,
// which releases the lease. Work still running after StopWarnAfter is
// named at Warn; the wait goes on until it returns (E11): an unreleased
// lease then outlives the app's stop until the process exits.
func (ro *role) stop(log *zap.Logger) {
	defer close(ro.released)
	begin := time.Now()
	workDone := make(chan struct{})
	go func() {
		defer close(workDone)
		var wg sync.WaitGroup
		for _, w := range ro.works() {
			wg.Go(func() {
				// No deadline: the lease is kept until the work returns.
				if err := w.Stop(context.Background()); err != nil {
					log.Warn("LeaderWorkStopFailed", zap.String("role", ro.name), zap.Error(err))
				}
			})
		}
		wg.Wait()
	}()
	warn := time.NewTimer(StopWarnAfter)
	select {
	case <-workDone:
		warn.Stop()
	case <-warn.C:
		now := time.Now()
		running := ro.running()
		for _, a := range running {
			log.Warn("LeaderWorkStillRunning", zap.String("role", ro.name), zap.String(a.Kind, a.Name),
				zap.Duration("running_for", now.Sub(a.Since)), zap.String("lease", "kept until it returns"))
		}
		if len(running) == 0 {
			log.Warn("LeaderWorkStillRunning", zap.String("role", ro.name), zap.String("lease", "kept until it returns"))
		}
		close(ro.settled)
		<-workDone
		log.Info("LeaderWorkReturned", zap.String("role", ro.name), zap.Duration("after", time.Since(begin)))
	}
	// The release is worth trying only while the lease runs.
	ctx, cancel := context.WithTimeout(context.Background(), ro.opts.Lease)
	defer cancel()
	ro.stopErr = ro.elector.Stop(ctx)
	select {
	case <-ro.settled:
	default:
		close(ro.settled)
	}
}
