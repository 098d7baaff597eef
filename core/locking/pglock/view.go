package pglock

import (
	"context"
	"io"

	"github.com/hostloom/hostloom/core/jobrecord"
	"github.com/hostloom/hostloom/core/locking"
)

// ForLock returns the provider to hand to locking.New: p itself, or, with
// Options.DisableNotifications, a view of p without the events and resign
// capabilities (locking.Subscriber, locking.ResignRequester), so that
// locking.New, which finds capabilities once by their interfaces (L9),
// reports them missing and the elector polls from the start instead of
// retrying a subscription that cannot work. NewLock uses it.
func (p *Provider) ForLock() locking.Provider {
	if p.o.DisableNotifications {
		return polling{p}
	}
	return p
}

// polling is a Provider without Subscribe and RequestResign.
type polling struct{ p *Provider }

var (
	_ locking.ParticipantRegistry = polling{}
	_ locking.Inspector           = polling{}
	_ locking.RecordStore         = polling{}
	_ jobrecord.State             = polling{}
	_ io.Closer                   = polling{}
	_ locking.ReleaseWithdrawer   = polling{}
	_ locking.ReleaseReserver     = polling{}
)

// WithdrawsOnRelease implements locking.ReleaseWithdrawer.
func (polling) WithdrawsOnRelease() bool { return true }

// ReservesOnRelease implements locking.ReleaseReserver.
func (polling) ReservesOnRelease() bool { return true }

func (v polling) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	return v.p.Acquire(ctx, r)
}

func (v polling) Extend(ctx context.Context, r locking.ExtendRequest) (locking.ExtendResult, error) {
	return v.p.Extend(ctx, r)
}

func (v polling) Release(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	return v.p.Release(ctx, r)
}

func (v polling) Participants(ctx context.Context, key string) ([]locking.Participant, error) {
	return v.p.Participants(ctx, key)
}

func (v polling) Deregister(ctx context.Context, key, owner string) error {
	return v.p.Deregister(ctx, key, owner)
}

func (v polling) Inspect(ctx context.Context, key string) (locking.ProviderKeyState, error) {
	return v.p.Inspect(ctx, key)
}

func (v polling) Keys(ctx context.Context, prefix string) ([]string, error) {
	return v.p.Keys(ctx, prefix)
}

func (v polling) Advance(ctx context.Context, key string, value int64) (bool, int64, error) {
	return v.p.Advance(ctx, key, value)
}

func (v polling) State(ctx context.Context, key string) (int64, bool, error) {
	return v.p.State(ctx, key)
}

func (v polling) LoadRecord(ctx context.Context, key string) (jobrecord.Stored, error) {
	return v.p.LoadRecord(ctx, key)
}

func (v polling) SwapRecord(ctx context.Context, key string, from jobrecord.Stored, w jobrecord.Write) (bool, error) {
	return v.p.SwapRecord(ctx, key, from, w)
}

func (v polling) LoadHistory(ctx context.Context, key string) (jobrecord.Stored, map[int]string, error) {
	return v.p.LoadHistory(ctx, key)
}

func (v polling) Close() error { return v.p.Close() }
