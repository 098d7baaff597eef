//go:build linux

package etcdtest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// peerProxySupported reports whether Options.PeerProxy works here.
const peerProxySupported = true

// socketOwner finds, among pids, the process that owns the TCP socket
// bound to local port srcPort and connected to port dstPort on loopback:
// the socket's inode from /proc/net/tcp, then the process whose file
// descriptors include it.
func socketOwner(srcPort, dstPort int, pids map[int]*Member) (int, bool) {
	inode := ""
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if inode = socketInode(table, srcPort, dstPort); inode != "" {
			break
		}
	}
	if inode == "" {
		return 0, false
	}
	want := "socket:[" + inode + "]"
	for pid := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == want {
				return pid, true
			}
		}
	}
	return 0, false
}

// socketInode returns the inode of the socket of table whose local port
// is src and remote port dst, "" when there is none.
func socketInode(table string, src, dst int) string {
	f, err := os.Open(table)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 {
			continue
		}
		if port(fs[1]) == src && port(fs[2]) == dst {
			return fs[9]
		}
	}
	return ""
}

// port parses the port of a /proc/net/tcp address "HEXADDR:HEXPORT".
func port(addr string) int {
	_, p, ok := strings.Cut(addr, ":")
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(p, 16, 32)
	if err != nil {
		return -1
	}
	return int(n)
}
