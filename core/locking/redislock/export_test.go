package redislock

// Internals exposed to the external tests.
var (
	KeySlot = keySlot
)

// ChannelOf returns p's release channel of key.
func ChannelOf(p *Provider, key string) string { return p.channel(key) }
