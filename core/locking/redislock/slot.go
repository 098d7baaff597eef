package redislock

import "strings"

// slots is the number of Redis Cluster hash slots.
const slots = 16384

// hashTag returns the part of key Redis Cluster hashes: the text between the
// first '{' and the first '}' after it when that is nonempty, else the whole
// key. ok reports whether key has such a tag.
func hashTag(key string) (tag string, ok bool) {
	s := strings.IndexByte(key, '{')
	if s < 0 {
		return key, false
	}
	e := strings.IndexByte(key[s+1:], '}')
	if e <= 0 {
		return key, false
	}
	return key[s+1 : s+1+e], true
}

// keySlot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of its hash
// tag, modulo 16384.
func keySlot(key string) int {
	tag, _ := hashTag(key)
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % slots
}

// releaseSuffix ends every release channel.
const releaseSuffix = ":released"

// Release channel modes, passed to the release script as ARGV[2] so that it
// builds the channel itself (no allocation per release on this side).
const (
	noChannel      = ""  // releases of the key are not published
	suffixChannel  = "k" // key + ":released"
	wrappedChannel = "w" // "{" + key + "}:released"
)

// channelMode returns how key's release channel is formed.
//
// Standalone and Sentinel: key + ":released". Redis Cluster requires the
// channel to hash to key's slot, because the release script publishes it
// with SPUBLISH: a key with a hash tag keeps it (key + ":released"); a key
// without one is wrapped so its whole text becomes the tag
// ("{" + key + "}:released"), which is possible only when key holds no '}'.
// For the remaining keys (no valid tag, yet a '}'; or empty, which package
// locking never passes) there is no channel: their releases are not
// published and waiters rely on the holder's TTL.
func (p *Provider) channelMode(key string) string {
	if !p.cluster {
		return suffixChannel
	}
	if _, ok := hashTag(key); ok {
		return suffixChannel
	}
	if key == "" || strings.IndexByte(key, '}') >= 0 {
		return noChannel
	}
	return wrappedChannel
}

// channel returns key's release channel, or "" when releases of key are
// not published (see channelMode).
func (p *Provider) channel(key string) string {
	switch p.channelMode(key) {
	case suffixChannel:
		return key + releaseSuffix
	case wrappedChannel:
		return "{" + key + "}" + releaseSuffix
	default:
		return ""
	}
}
