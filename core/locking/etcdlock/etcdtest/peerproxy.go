package etcdtest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// peerNet carries the members' peer traffic when Options.PeerProxy is
// set: each member advertises the address of a proxy of its own, so every
// connection from one member to another passes through the proxy of the
// member it reaches. The proxy learns which member opened a connection
// from the operating system (the process that owns the connecting
// socket), so it can cut a member off in both directions: connections to
// it and connections from it.
type peerNet struct {
	mu       sync.Mutex
	members  []*Member
	isolated map[*Member]bool
	links    map[*peerLink]struct{}
	lns      []net.Listener
	closed   bool
	wg       sync.WaitGroup
}

// peerProxy is the proxy in front of one member's peer listener.
type peerProxy struct {
	net    *peerNet
	to     *Member
	target string // the member's real peer address
	ln     net.Listener
}

// peerLink is one proxied connection: from is nil when no member owns the
// connecting socket (a client other than a member).
type peerLink struct {
	from, to *Member
	a, b     net.Conn
	once     sync.Once
}

func (l *peerLink) close() {
	l.once.Do(func() {
		_ = l.a.Close()
		if l.b != nil {
			_ = l.b.Close()
		}
	})
}

func newPeerNet() *peerNet {
	return &peerNet{isolated: map[*Member]bool{}, links: map[*peerLink]struct{}{}}
}

// listen starts the proxy of member to on addr, forwarding to target.
func (n *peerNet) listen(to *Member, addr, target string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("etcdtest: peer proxy of %s: %w", to.name, err)
	}
	p := &peerProxy{net: n, to: to, target: target, ln: ln}
	n.mu.Lock()
	n.members = append(n.members, to)
	n.lns = append(n.lns, ln)
	n.mu.Unlock()
	n.wg.Go(p.accept)
	return nil
}

func (p *peerProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.net.wg.Go(func() { p.serve(c) })
	}
}

// owner returns the member whose process opened c, nil when none did.
func (n *peerNet) owner(c net.Conn) *Member {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return nil
	}
	n.mu.Lock()
	ms := append([]*Member(nil), n.members...)
	n.mu.Unlock()
	pids := map[int]*Member{}
	for _, m := range ms {
		if pid := m.pid(); pid > 0 {
			pids[pid] = m
		}
	}
	pid, ok := socketOwner(remote.Port, local.Port, pids)
	if !ok {
		return nil
	}
	return pids[pid]
}

func (p *peerProxy) serve(c net.Conn) {
	from := p.net.owner(c)
	l := &peerLink{from: from, to: p.to, a: c}
	if !p.net.track(l) {
		l.close()
		return
	}
	defer p.net.untrack(l)
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		l.close()
		return
	}
	p.net.mu.Lock()
	l.b = s
	cut := p.net.closed || p.net.cutLocked(l)
	p.net.mu.Unlock()
	if cut {
		l.close()
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		l.close()
		done <- struct{}{}
	}
	go pipe(s, c)
	go pipe(c, s)
	<-done
	<-done
}

// cutLocked reports whether l crosses the cut; n.mu is held.
func (n *peerNet) cutLocked(l *peerLink) bool {
	return n.isolated[l.to] || (l.from != nil && n.isolated[l.from])
}

// track registers l unless it crosses the cut or the network is closed.
func (n *peerNet) track(l *peerLink) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.cutLocked(l) {
		return false
	}
	n.links[l] = struct{}{}
	return true
}

func (n *peerNet) untrack(l *peerLink) {
	n.mu.Lock()
	delete(n.links, l)
	n.mu.Unlock()
}

// isolate cuts m off (on) or joins it again (off).
func (n *peerNet) isolate(m *Member, on bool) {
	n.mu.Lock()
	n.isolated[m] = on
	var cut []*peerLink
	if on {
		for l := range n.links {
			if n.cutLocked(l) {
				cut = append(cut, l)
			}
		}
	}
	n.mu.Unlock()
	for _, l := range cut {
		l.close()
	}
}

// isIsolated reports whether m is cut off.
func (n *peerNet) isIsolated(m *Member) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.isolated[m]
}

// close stops every proxy and connection and waits for them.
func (n *peerNet) close() {
	n.mu.Lock()
	n.closed = true
	lns := n.lns
	links := make([]*peerLink, 0, len(n.links))
	for l := range n.links {
		links = append(links, l)
	}
	n.mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close()
	}
	for _, l := range links {
		l.close()
	}
	n.wg.Wait()
}

// errNoPeerProxy is returned by Isolate and Rejoin of a member of a cluster
// launched without Options.PeerProxy.
var errNoPeerProxy = errors.New("etcdtest: the cluster was launched without Options.PeerProxy")
