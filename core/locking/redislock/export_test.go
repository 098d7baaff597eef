package redislock

// Internals exposed to the external tests.
var (
	KeySlot = keySlot
)

// ChannelOf returns p's release channel of key.
func ChannelOf(p *Provider, key string) string { return p.channel(key) }

// MetaKey is the meta hash key of a lock key.
var MetaKey = metaKey

// SlotTag is a short string hashing to slot.
var SlotTag = slotTag

// OpError is the error wrapping of every operation.
var OpError = opError

// WaitKey is the waiter mark key of a lock key.
var WaitKey = waitKey

// QueuedMarks is how many waiter marks wait for the next coalesced round.
func QueuedMarks(p *Provider) int {
	p.marks.mu.Lock()
	defer p.marks.mu.Unlock()
	if p.marks.next == nil {
		return 0
	}
	return len(p.marks.next.keys)
}

// HoldPubsub holds the SUBSCRIBE/UNSUBSCRIBE writes of p's subscription
// (not on Cluster) until release is called: the channels asked meanwhile
// wait, counted by WantedChannels.
func HoldPubsub(p *Provider) (release func()) {
	p.mu.Lock()
	s := p.subs[-1]
	p.mu.Unlock()
	s.op.Lock()
	return s.op.Unlock
}

// WantedChannels is how many channels of p's subscription (not on
// Cluster) wait for their SUBSCRIBE or UNSUBSCRIBE to be written.
func WantedChannels(p *Provider) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.subs[-1].wants)
}
