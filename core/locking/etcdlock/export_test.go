package etcdlock

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
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

// KeepAlive is the provider's keep-alive of lease id (see keepalive.go).
func (p *Provider) KeepAlive(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	return keepAliveOnce(ctx, p, id)
}

// IdleStreams is how many keep-alive streams the provider keeps idle.
func (p *Provider) IdleStreams() int {
	p.ka.mu.Lock()
	defer p.ka.mu.Unlock()
	return len(p.ka.idle)
}

// BreakIdleStreams ends the idle keep-alive streams and keeps them idle,
// as a member's restart breaks them while the provider does not know.
func (p *Provider) BreakIdleStreams() {
	p.ka.mu.Lock()
	defer p.ka.mu.Unlock()
	for _, s := range p.ka.idle {
		s.cancel()
	}
}
