// Package gocronleader lets a github.com/go-co-op/gocron/v2 scheduler run
// its jobs only on the instance that leads a HostLoom role.
//
//	e, err := gocronleader.New(elector)
//	s, err := gocron.NewScheduler(gocron.WithDistributedElector(e))
//	_, err = s.NewJob(gocron.DurationJob(time.Minute),
//		gocron.NewTask(gocronleader.Task(elector, syncInventory)),
//		gocron.WithSingletonMode(gocron.LimitModeReschedule))
//
// # Elector
//
// Elector implements gocron's Elector interface over a
// leadership.Leadership. gocron asks IsLeader before each run; Elector
// answers from the elector's local state (IsLeader), with no I/O, so the
// question costs nothing and never blocks a run on the network. Followers
// return ErrNotLeader and gocron skips the run.
//
// # Job context
//
// gocron hands a task whose first parameter is a context.Context the job's
// context, which ends when the job is removed or the scheduler shuts down,
// not when leadership ends. IsLeader is a check at the start only: a run
// that started while leading goes on after leadership is lost unless it
// watches the leadership Token. Task wraps a func(ctx) error so that its
// ctx is the job's context that also ends with the leadership term in
// which the run started, and so that a run whose term ended between
// gocron's IsLeader and the call does not start at all (it returns
// ErrNotLeader).
//
// # What gocron does not do here
//
// gocron with an elector gives leader-only runs; it keeps no record of
// slots across instances. A new leader neither knows which runs its
// predecessor made nor catches up a run that fell due during the
// handover, and overlapping runs of one job need
// gocron.WithSingletonMode. Package scheduling (the parent package) does
// both with a slot store: use it when a job must run once per slot across
// failover.
package gocronleader
