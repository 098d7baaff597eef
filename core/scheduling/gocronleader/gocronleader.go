package gocronleader

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/go-co-op/gocron/v2"

	"github.com/hostloom/hostloom/core/leadership"
)

// ErrNotLeader is returned (wrapped, naming the role) by Elector.IsLeader
// on a follower and by a Task whose leadership ended before it started.
var ErrNotLeader = errors.New("gocronleader: not the leader")

// Elector is a gocron.Elector over a leadership.Leadership. It is safe for
// concurrent use.
type Elector struct {
	l         leadership.Leadership
	notLeader error
}

var _ gocron.Elector = (*Elector)(nil)

// New returns an Elector over l; it fails for a nil l.
func New(l leadership.Leadership) (*Elector, error) {
	if l == nil || (reflect.ValueOf(l).Kind() == reflect.Pointer && reflect.ValueOf(l).IsNil()) {
		return nil, errors.New("gocronleader: nil Leadership")
	}
	return &Elector{l: l, notLeader: notLeader(l)}, nil
}

func notLeader(l leadership.Leadership) error {
	return fmt.Errorf("%w of role %q", ErrNotLeader, l.Role())
}

// IsLeader implements gocron.Elector: nil while this instance leads, an
// error matching ErrNotLeader otherwise. It reads local state only and
// ignores ctx.
func (e *Elector) IsLeader(context.Context) error {
	if e.l.IsLeader() {
		return nil
	}
	return e.notLeader
}

// Task wraps fn for gocron.NewTask: the ctx fn receives is gocron's job
// context that also ends when the leadership term in which the run started
// ends. When l does not lead at the call (leadership ended after gocron's
// IsLeader), fn is not called and Task's function returns an error
// matching ErrNotLeader.
func Task(l leadership.Leadership, fn func(ctx context.Context) error) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		tok := l.Token()
		if tok.Err() != nil {
			return notLeader(l)
		}
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(tok, func() { cancel(notLeader(l)) })
		defer stop()
		return fn(ctx)
	}
}
