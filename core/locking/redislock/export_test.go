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

// OpError and CtxErr are the error wrapping of every operation.
var (
	OpError = opError
	CtxErr  = ctxErr
)

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
