package pglock

import (
	"context"
	"fmt"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// Participants implements locking.ParticipantRegistry: the key's live
// participants, read with the lease in one statement (see Inspect).
func (p *Provider) Participants(ctx context.Context, key string) ([]locking.Participant, error) {
	st, err := p.Inspect(ctx, key)
	return st.Participants, err
}

// WithdrawsOnRelease implements locking.ReleaseWithdrawer: Release
// honours ReleaseRequest.Withdraw.
func (*Provider) WithdrawsOnRelease() bool { return true }

// ReservesOnRelease implements locking.ReleaseReserver: Release honours
// ReleaseRequest.Hold (the lease table's held_for and held_until), and
// every acquisition respects the hold.
func (*Provider) ReservesOnRelease() bool { return true }

// Deregister implements locking.ParticipantRegistry with one DELETE.
func (p *Provider) Deregister(ctx context.Context, key, owner string) error {
	if err := p.begin(ctx, "deregister"); err != nil {
		return err
	}
	if _, err := p.pool.Exec(ctx, p.sql.deregister, p.mode, key, owner); err != nil {
		return p.opError("deregister", ctx, err)
	}
	return nil
}

// Inspect implements locking.Inspector: the live holder and its
// remaining time, the last fence (kept after a release) and the live
// participants, by the server's clock, in one statement. Records cannot
// fail to parse here: the columns are typed.
func (p *Provider) Inspect(ctx context.Context, key string) (locking.ProviderKeyState, error) {
	var st locking.ProviderKeyState
	if err := p.begin(ctx, "inspect"); err != nil {
		return st, err
	}
	var us int64
	var owners []string
	var since []int64
	var prio []int32
	err := p.pool.QueryRow(ctx, p.sql.inspect, p.mode, key).
		Scan(&st.Held, &st.Value, &us, &st.Fence, &owners, &since, &prio)
	if err != nil {
		return locking.ProviderKeyState{}, p.opError("inspect", ctx, err)
	}
	if len(since) != len(owners) || len(prio) != len(owners) {
		return locking.ProviderKeyState{}, fmt.Errorf("pglock: inspect %q: %d owners, %d times, %d priorities", key, len(owners), len(since), len(prio))
	}
	if st.Held {
		st.TTL = fromMicros(us)
	} else {
		st.Value = ""
	}
	for i, o := range owners {
		st.Participants = append(st.Participants, locking.Participant{
			Owner:    o,
			Since:    time.UnixMicro(since[i]),
			Priority: int(prio[i]),
		})
	}
	return st, nil
}

// Keys implements locking.Inspector: the keys starting with prefix
// that have a row in the lease table (held, or released with their fence
// kept) or a live participant.
func (p *Provider) Keys(ctx context.Context, prefix string) ([]string, error) {
	if err := p.begin(ctx, "keys"); err != nil {
		return nil, err
	}
	rows, err := p.pool.Query(ctx, p.sql.keys, p.mode, prefix)
	if err != nil {
		return nil, p.opError("keys", ctx, err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, p.opError("keys", ctx, err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, p.opError("keys", ctx, err)
	}
	return keys, nil
}
