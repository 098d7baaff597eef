package etcdlock

import (
	"context"
	"time"
)

// RegisterWhileHeld is Extend's registration of owner as a participant of
// key for ttl, sent as a renewal of the lease that stores value sends it
// (one past Extend's check that the provider holds the value): it writes
// the record only while the key's lease record still stores value.
func (p *Provider) RegisterWhileHeld(ctx context.Context, key, owner, value string, ttl time.Duration) (bool, error) {
	reg, err := p.registration(ctx, key, owner, ttl, 0)
	if err != nil || reg.put == nil {
		return false, err
	}
	return p.registerWhileHeld(ctx, key, value, reg)
}
