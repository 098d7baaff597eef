package main

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostloom/hostloom/core/locking"
)

func newRelease(g *globals, sio stdio) *cobra.Command {
	var force, yes bool
	var wait time.Duration
	c := &cobra.Command{
		Use:   "release --force ROLE",
		Short: "Delete ROLE's lease (the leader is not asked: prefer resign)",
		Long: `release --force deletes the lease of ROLE, so another participant can
take the role at once. It is the last resort for a leader that does not
answer resign (a wedged process whose lease keeps being renewed would
retake it; this is for leases nobody should hold any more).

The leader is not told. Until its next renewal is refused (at most
leadership.renew_interval later) it still believes it leads, and its
successor may already run: only stores that check the fence refuse the old
leader's writes. release prints this warning first and asks for the role's
name on a terminal; without a terminal it refuses unless --yes is given.

Only the lease read before the warning is deleted: when the role changed
hands meanwhile, nothing is. release then waits up to --wait for the next
leader.`,
		Example: `  hostloom release --force billing -config app.yaml
  hostloom release --force billing --yes --json`,
		Args: exactArgs("ROLE"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return release(cmd.Context(), g, sio, args[0], yes, wait)
		}),
	}
	c.Flags().BoolVar(&force, "force", false, "required: delete the lease although its leader is not asked")
	c.Flags().BoolVar(&yes, "yes", false, "do not ask for confirmation (needed without a terminal)")
	c.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the next leader; 0 does not wait")
	_ = c.MarkFlagRequired("force") // the flag exists: never fails
	return c
}

func release(ctx context.Context, g *globals, sio stdio, role string, yes bool, wait time.Duration) error {
	return withRole(ctx, g, sio, role, wait, func(e *env, rk roleKey) error {
		pkey, err := e.lock.ProviderKey(rk.key)
		if err != nil {
			return err
		}
		value, ok, err := e.leaseValue(ctx, pkey)
		if err != nil {
			return err
		}
		before, err := e.inspect(ctx, rk.key)
		if err != nil {
			return err
		}
		if !ok || !before.Held {
			return fmt.Errorf("role %q in namespace %q has no leader: no lease to release", role, e.namespace())
		}
		fmt.Fprintf(sio.err, `WARNING: this deletes the lease of role %q held by %q (fence %s, %s left).
%s is not told: it keeps acting as leader until its next renewal is refused
(up to leadership.renew_interval, %v), while a successor may already lead.
Only stores that check the fence refuse its writes. Prefer: hostloom resign %s
`, role, before.Holder.Owner, showUint(before.Fence), showDuration(before.Holder.TTL),
			before.Holder.Owner, e.cfg.Leadership.For(role).RenewInterval, role)
		if !yes {
			if !sio.tty {
				return fmt.Errorf("release --force %s: refusing without a terminal to confirm on; pass --yes to delete the lease anyway", role)
			}
			fmt.Fprintf(sio.err, "Type the role name (%s) to delete its lease: ", role)
			line, _ := bufio.NewReader(sio.in).ReadString('\n')
			if strings.TrimSpace(line) != role {
				return fmt.Errorf("release --force %s: not confirmed; nothing deleted", role)
			}
		}
		now, ok, err := e.leaseValue(ctx, pkey)
		if err != nil {
			return err
		}
		if !ok || now != value {
			return fmt.Errorf("role %q changed hands since it was read; nothing deleted (run hostloom status %s)", role, role)
		}
		events, stop, _ := e.subscribe(ctx, rk.key)
		defer stop()
		// The release notification is the one a leader's own release
		// sends; the marker tells watch this one was a forced delete.
		e.markForced(ctx, pkey, before.Fence)
		start := time.Now()
		rctx, cancel := e.request(ctx)
		released, err := e.releaseLease(rctx, pkey, value)
		cancel()
		if err != nil || !released {
			e.unmarkForced(ctx, pkey)
		}
		if err != nil {
			return fmt.Errorf("release %q: %w", role, err)
		}
		if !released {
			return fmt.Errorf("role %q changed hands since it was read; nothing deleted (run hostloom status %s)", role, role)
		}
		out := handoverJSON{Role: role, Previous: before.Holder.Owner, PreviousFence: before.Fence, Waited: wait > 0}
		if wait > 0 {
			next, at, err := e.nextTerm(ctx, rk.key, before, events, start.Add(wait))
			if err != nil {
				return err
			}
			if next.Held && (next.Fence != before.Fence || next.Holder.Owner != before.Holder.Owner) {
				out.Leader, out.Fence = next.Holder.Owner, next.Fence
				out.LatencyMillis = float64(at.Sub(start).Microseconds()) / 1000
			}
		}
		if g.structured() {
			return g.write(sio.out, out)
		}
		fmt.Fprintf(sio.out, "Deleted the lease of role %s (held by %s, fence %s).\n", role, out.Previous, showUint(out.PreviousFence))
		switch {
		case out.Leader != "":
			fmt.Fprintf(sio.out, "%s leads now (fence %s), %.1fms after the release.\n", out.Leader, showUint(out.Fence), out.LatencyMillis)
		case wait > 0:
			fmt.Fprintf(sio.out, "Nobody took the role within %v.\n", wait)
		}
		return nil
	})
}

// leaseValue reads the ownership record stored under the provider key.
func (e *env) leaseValue(ctx context.Context, pkey string) (string, bool, error) {
	in, ok := e.session.Provider.(locking.Inspector)
	if !ok {
		return "", false, fmt.Errorf("provider %s cannot read a lease's holder", e.cfg.Locking.Provider)
	}
	rctx, cancel := e.request(ctx)
	defer cancel()
	st, err := in.Inspect(rctx, pkey)
	return st.Value, err == nil && st.Held, err
}

// releaseLease deletes the lease of pkey when it still stores value, and
// announces the release as a leader's own release does, so candidates
// take the role at once. The key keeps its last fence, so the next
// holder's fence is still greater (L1); over PostgreSQL with
// locking.postgres.notifications false there is no announcement, and
// candidates find the role free at their next attempt.
func (e *env) releaseLease(ctx context.Context, pkey, value string) (bool, error) {
	return e.session.Provider.Release(ctx, locking.ReleaseRequest{Key: pkey, Value: value, Notify: true})
}

// forcedTTL is how long the marker of a forced delete stays: long enough
// for every watch to read it after the release notification or a poll.
const forcedTTL = time.Minute

// forcedMarker is the note release --force leaves, holding the deleted
// term's fence, just before it deletes pkey's lease. Its name holds a
// space, so it is never a consumer key: the locking package's key listing
// leaves it out, and no role's key can be it.
func forcedMarker(pkey string) string { return pkey + " deleted-by-release-force" }

// markForced records that the lease of pkey with fence is being deleted
// by force, where the backend keeps notes (lockbuild.Notes; elsewhere
// watch shows the delete as a release). A failure only costs watch the
// word: it warns and goes on.
func (e *env) markForced(ctx context.Context, pkey string, fence uint64) {
	if e.session.Notes == nil {
		return
	}
	rctx, cancel := e.request(ctx)
	defer cancel()
	if err := e.session.Notes.SetNote(rctx, forcedMarker(pkey), strconv.FormatUint(fence, 10), forcedTTL); err != nil {
		fmt.Fprintf(e.stderr, "hostloom: warning: could not mark the delete for watch (it will show released): %v\n", err)
	}
}

// unmarkForced removes the marker when nothing was deleted.
func (e *env) unmarkForced(ctx context.Context, pkey string) {
	if e.session.Notes == nil {
		return
	}
	rctx, cancel := e.request(ctx)
	defer cancel()
	_ = e.session.Notes.DeleteNote(rctx, forcedMarker(pkey))
}

// forcedDelete reports whether the term of key with fence ended by
// release --force (its marker is there and names that fence).
func (e *env) forcedDelete(ctx context.Context, key string, fence uint64) bool {
	if e.session.Notes == nil {
		return false
	}
	pkey, err := e.lock.ProviderKey(key)
	if err != nil {
		return false
	}
	rctx, cancel := e.request(ctx)
	defer cancel()
	v, ok, err := e.session.Notes.Note(rctx, forcedMarker(pkey))
	return err == nil && ok && v == strconv.FormatUint(fence, 10)
}
