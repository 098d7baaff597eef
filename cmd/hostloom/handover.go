package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostloom/hostloom/core/locking"
)

func newHandOver(g *globals, sio stdio) *cobra.Command {
	var (
		wait time.Duration
		to   string
	)
	c := &cobra.Command{
		Use:   "handover ROLE --to IDENTITY",
		Short: "Ask ROLE's leader to hand the role to a named participant",
		Long: `handover asks the current leader of ROLE to step down and hand the role
to IDENTITY, one of the role's participants (see hostloom status), through
the lock's notification channel: the leader's elector ends its term,
releases the lease naming IDENTITY, and IDENTITY takes the role at once;
the other participants hold back for one retry interval. Nothing is
deleted: a leader that does not hear the request (an older version, no
subscription) keeps the role, and handover says so after --wait.

handover then waits up to --wait for the next term and reports its leader,
fence and how long the handover took. --wait 0 only sends the request.`,
		Example: `  hostloom handover billing --to replica-b -config app.yaml
  hostloom handover billing --to replica-b --wait 0 --json`,
		Args: exactArgs("ROLE"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return badUsage("handover needs --to IDENTITY, one of the role's participants")
			}
			return handOver(cmd.Context(), g, sio, args[0], to, wait)
		}),
	}
	c.Flags().StringVar(&to, "to", "", "the participant to hand the role to (required)")
	c.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the next leader; 0 does not wait")
	return c
}

func handOver(ctx context.Context, g *globals, sio stdio, role, to string, wait time.Duration) error {
	return withRole(ctx, g, sio, role, wait, func(e *env, rk roleKey) error {
		before, err := e.inspect(ctx, rk.key)
		if err != nil {
			return err
		}
		if !before.Held {
			return fmt.Errorf("role %q in namespace %q has no leader to hand over", role, e.namespace())
		}
		if err := canHandOver(e.lock, role); err != nil {
			return err
		}
		if err := checkSuccessor(role, to, before); err != nil {
			return err
		}
		events, stop, _ := e.subscribe(ctx, rk.key)
		defer stop()
		start := time.Now()
		rctx, cancel := e.request(ctx)
		err = e.lock.RequestHandOver(rctx, rk.key, before.Holder.Owner, to)
		cancel()
		if err != nil {
			return err
		}
		out := handoverJSON{Role: role, Previous: before.Holder.Owner, PreviousFence: before.Fence, Waited: wait > 0}
		if wait > 0 {
			next, at, err := e.nextTerm(ctx, rk.key, before, events, start.Add(wait))
			if err != nil {
				return err
			}
			switch {
			case next.Held && next.Fence == before.Fence && next.Holder.Owner == before.Holder.Owner:
				return fmt.Errorf("role %q: leader %q did not step down within %v (does it run a HostLoom version that hears handover requests?)", role, before.Holder.Owner, wait)
			case !next.Held:
				return fmt.Errorf("role %q: leader %q stepped down, but %q did not take the role within %v", role, before.Holder.Owner, to, wait)
			case next.Holder.Owner != to:
				return fmt.Errorf("role %q: %q took the role, not %q (did %q stop meanwhile?)", role, next.Holder.Owner, to, to)
			}
			out.Leader, out.Fence = next.Holder.Owner, next.Fence
			out.LatencyMillis = float64(at.Sub(start).Microseconds()) / 1000
		}
		if g.json {
			return writeJSON(sio.out, out)
		}
		if wait == 0 {
			fmt.Fprintf(sio.out, "Asked %s to hand role %s to %s.\n", out.Previous, role, to)
			return nil
		}
		fmt.Fprintf(sio.out, "%s handed role %s to %s (fence %s), %.1fms after the request.\n",
			out.Previous, role, out.Leader, showUint(out.Fence), out.LatencyMillis)
		return nil
	})
}

// canHandOver reports, before anything is sent, that lock cannot deliver
// a handover request to role's leader (its provider publishes no resign
// requests, or no events the leader would hear them through).
func canHandOver(lock *locking.DistributedLock, role string) error {
	if !lock.Capabilities().Resign {
		return fmt.Errorf("role %q: handover is not supported by this lock (its provider cannot send resign requests to the leader)", role)
	}
	return nil
}

// checkSuccessor fails when to is not one of the role's participants, or
// already leads it, naming the participants.
func checkSuccessor(role, to string, st locking.KeyState) error {
	names := make([]string, 0, len(st.Participants))
	for _, p := range st.Participants {
		names = append(names, p.Owner)
	}
	list := "none"
	if len(names) > 0 {
		q := make([]string, len(names))
		for i, n := range names {
			q[i] = strconv.Quote(n)
		}
		list = strings.Join(q, ", ")
	}
	switch {
	case to == st.Holder.Owner:
		return fmt.Errorf("role %q: %q already leads it (participants: %s)", role, to, list)
	case !slices.Contains(names, to):
		return fmt.Errorf("role %q: %q is not a participant (participants: %s)", role, to, list)
	}
	return nil
}
