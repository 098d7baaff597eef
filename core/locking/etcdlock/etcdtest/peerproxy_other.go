//go:build !linux

package etcdtest

// peerProxySupported reports whether Options.PeerProxy works here: it
// needs Linux's /proc to learn which member opened a connection.
const peerProxySupported = false

func socketOwner(srcPort, dstPort int, pids map[int]*Member) (int, bool) { return 0, false }
