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
