package redislock

import "testing"

func TestKeySlot_KnownVectors(t *testing.T) {
	// CRC16/XMODEM check value and slots from the Redis Cluster
	// specification; the cluster test compares more keys with CLUSTER
	// KEYSLOT.
	for k, want := range map[string]int{
		"123456789":     0x31C3 % slots,
		"somekey":       11058,
		"foo{hash_tag}": 2515,
		"{hash_tag}bar": 2515,
	} {
		if got := keySlot(k); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", k, got, want)
		}
	}
}

func TestChannel_ClusterSameSlotAsKey(t *testing.T) {
	p := &Provider{cluster: true}
	for _, k := range []string{"plain:lock:job", "{ns}:lock:job", "ns:lock:a{b", "{ns}:lock:a}b", "x{y}z", "ключ"} {
		ch := p.channel(k)
		if ch == "" {
			t.Fatalf("channel(%q) = \"\", want a channel", k)
		}
		if keySlot(ch) != keySlot(k) {
			t.Errorf("channel(%q) = %q hashes to %d, key to %d", k, ch, keySlot(ch), keySlot(k))
		}
	}
	// No valid tag but a '}': no channel can hash to the key's slot.
	for _, k := range []string{"ns:lock:a}b", "ns:lock:{}", "ns:lock:}{"} {
		if ch := p.channel(k); ch != "" {
			t.Errorf("channel(%q) = %q, want none", k, ch)
		}
	}
	standalone := &Provider{}
	if ch := standalone.channel("ns:lock:a}b"); ch != "ns:lock:a}b:released" {
		t.Errorf("standalone channel = %q", ch)
	}
}
