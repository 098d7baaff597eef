package leadership

import (
	"context"
	"errors"
	"sync"
)

// StopAll stops many electors, as a process that leaves does (E8, B1):
// first those that lead, in parallel, then the others, in parallel. The
// leaders' releases wake their roles' successors before the candidates'
// stops (ending subscriptions, deregistering) take the process's CPU and
// the lock's connections: a process stopping 50,000 electors hands its
// roles over in a fraction of the time its Stop calls take together.
//
// An elector that leads when StopAll looks is stopped in the first wave;
// one that wins a role meanwhile releases it in the second. ctx bounds
// every Stop, as in Stop. It returns once every elector has stopped, with
// their errors joined. A nil elector is skipped.
func StopAll(ctx context.Context, electors ...*Elector) error {
	var leading, others []*Elector
	for _, e := range electors {
		switch {
		case e == nil:
		case e.IsLeader():
			leading = append(leading, e)
		default:
			others = append(others, e)
		}
	}
	errs := stopEach(ctx, leading)
	errs = append(errs, stopEach(ctx, others)...)
	return errors.Join(errs...)
}

// stopEach stops es in parallel, each on its own goroutine.
func stopEach(ctx context.Context, es []*Elector) []error {
	errs := make([]error, len(es))
	var wg sync.WaitGroup
	for i, e := range es {
		wg.Go(func() { errs[i] = e.Stop(ctx) })
	}
	wg.Wait()
	return errs
}
