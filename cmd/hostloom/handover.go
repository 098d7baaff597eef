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
releases the lease naming IDENTITY, and IDENTITY takes the role at once.
For one retry interval the lock keeps the role for IDENTITY: the other
participants' attempts are refused, even one already on its way. Nothing is
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
	return stepDown(ctx, g, sio, role, to, wait)
}

// canHandOver reports, before anything is sent, that lock cannot deliver
// a handover request to role's leader.
func canHandOver(lock *locking.DistributedLock, role string) error {
	return canRequest(lock, role, "handover")
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
