package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostloom/hostloom/core/locking"
)

// roleJSON is one role in status and watch JSON.
type roleJSON struct {
	Role string `json:"role"`
	// Key is the consumer lock key (before namespacing).
	Key string `json:"key"`
	// Leader is the holder's identity; "" when nobody leads.
	Leader string `json:"leader,omitempty"`
	// TTLMillis is the lease's remaining time to live.
	TTLMillis int64 `json:"ttl_ms,omitempty"`
	// Fence is the current term's fencing token (G1), when the role is
	// led and the store issues fences.
	Fence uint64 `json:"fence,omitempty"`
	// LastFence is the last fence issued, when nobody leads.
	LastFence    uint64            `json:"last_fence,omitempty"`
	Participants []participantJSON `json:"participants"`
}

type participantJSON struct {
	Identity string    `json:"identity"`
	Leader   bool      `json:"leader"`
	Since    time.Time `json:"since"`
}

// storeJSON echoes where the CLI looked, never a password (nor, over
// PostgreSQL, the DSN: its host, port, user and database only).
type storeJSON struct {
	Provider  string   `json:"provider"`
	Addrs     []string `json:"addrs"`
	Username  string   `json:"username,omitempty"`
	Password  bool     `json:"password_set"`
	Database  string   `json:"database,omitempty"`
	Table     string   `json:"table,omitempty"`
	Namespace string   `json:"namespace"`
}

type statusJSON struct {
	Store storeJSON  `json:"store"`
	Roles []roleJSON `json:"roles"`
}

func (e *env) store() storeJSON {
	t := e.session.Target
	addrs := t.Addrs
	if addrs == nil {
		addrs = []string{}
	}
	return storeJSON{
		Provider:  string(e.cfg.Locking.Provider),
		Addrs:     addrs,
		Username:  t.Username,
		Password:  t.PasswordSet,
		Database:  t.Database,
		Table:     t.Table,
		Namespace: e.namespace(),
	}
}

// describe turns a key's state into its JSON form.
func describe(rk roleKey, st locking.KeyState) roleJSON {
	out := roleJSON{Role: rk.role, Key: rk.key, Participants: []participantJSON{}}
	if st.Held {
		out.Leader = st.Holder.Owner
		out.TTLMillis = st.Holder.TTL.Milliseconds()
		out.Fence = st.Fence
	} else {
		out.LastFence = st.Fence
	}
	for _, p := range st.Participants {
		out.Participants = append(out.Participants, participantJSON{
			Identity: p.Owner,
			Leader:   st.Held && p.Owner == st.Holder.Owner,
			Since:    p.Since.UTC(),
		})
	}
	return out
}

func newStatus(g *globals, sio stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "status [ROLE...]",
		Short: "Show who leads each role: leader, lease TTL, fence, participants",
		Long: `status lists every role of the namespace that the store (Redis,
PostgreSQL, etcd) keeps anything for
(a lease, a fence or a participant), or the roles given, with the leader's
identity, the lease's remaining TTL, the current term's fencing token and
the role's live participants (the running electors, leader or not).

A role nobody leads shows "-" as leader; its last fence stays in the JSON
as last_fence. A role given by name that the store knows nothing about is an
error (exit 1); a namespace with no roles at all is not: status says which
namespace it read (and where that came from) and exits 0. -o wide adds the
last fence of a role nobody leads and the role's lock key.`,
		Example: `  hostloom status -config app.yaml
  hostloom status billing -o json
  hostloom status --namespace shop -o wide`,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return status(cmd.Context(), g, sio, args)
		}),
	}
}

func status(ctx context.Context, g *globals, sio stdio, names []string) error {
	return withEnv(ctx, g, sio, func(e *env) error {
		roles, err := e.list(ctx, names)
		if err != nil {
			return err
		}
		out := statusJSON{Store: e.store(), Roles: []roleJSON{}}
		for _, rk := range roles {
			st, err := e.inspect(ctx, rk.key)
			if err != nil {
				return err
			}
			out.Roles = append(out.Roles, describe(rk, st))
		}
		if g.structured() {
			return g.write(sio.out, out)
		}
		if len(out.Roles) == 0 {
			fmt.Fprintf(sio.out, "No roles in %s.\n", e.namespaceRead())
			return nil
		}
		tw := newTable(sio.out)
		head := "ROLE\tLEADER\tTTL\tFENCE\tPARTICIPANTS"
		if g.wide() {
			head += "\tLAST FENCE\tKEY"
		}
		fmt.Fprintln(tw, head)
		for _, r := range out.Roles {
			ids := make([]string, len(r.Participants))
			for i, p := range r.Participants {
				ids[i] = p.Identity
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s", r.Role, showString(r.Leader),
				showDuration(time.Duration(r.TTLMillis)*time.Millisecond), showUint(r.Fence),
				showString(strings.Join(ids, ",")))
			if g.wide() {
				fmt.Fprintf(tw, "\t%s\t%s", showUint(r.LastFence), r.Key)
			}
			fmt.Fprintln(tw)
		}
		return tw.Flush()
	})
}
