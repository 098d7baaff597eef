package chaos

import (
	"fmt"
	"net"
	"sync"
	"time"
)

// Mode is what a Proxy does with traffic.
type Mode int

// Proxy modes.
const (
	// Pass forwards traffic as is.
	Pass Mode = iota + 1
	// Blackhole holds every byte in both directions (nothing is lost, as
	// TCP retransmits across a partition) until the mode changes; new
	// connections are accepted and held too.
	Blackhole
	// Delay forwards every chunk Delay after it arrived, in order.
	Delay
	// Reset closes every connection with a TCP reset and resets new ones
	// until the mode changes.
	Reset
)

// String is the mode's name.
func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Blackhole:
		return "blackhole"
	case Delay:
		return "delay"
	case Reset:
		return "reset"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Proxy is a loopback TCP proxy in front of one backend address, one per
// replica, so a fault can partition a single replica from Redis. Its
// methods are safe for concurrent use. Close stops every goroutine it
// started and waits for them.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	mode    Mode
	delay   time.Duration
	changed chan struct{} // closed and replaced on every mode change
	links   map[*link]struct{}
	closed  bool

	wg sync.WaitGroup
}

// link is one proxied connection pair.
type link struct {
	client net.Conn
	done   chan struct{} // closed by close

	mu     sync.Mutex
	server net.Conn
	closed bool
}

func newLink(c net.Conn) *link { return &link{client: c, done: make(chan struct{})} }

// setServer attaches the backend connection; false when the link was
// closed meanwhile (the caller closes s).
func (l *link) setServer(s net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.server = s
	return true
}

// close closes both connections, with a TCP reset when rst is set.
func (l *link) close(rst bool) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	close(l.done)
	conns := []net.Conn{l.client, l.server}
	l.mu.Unlock()
	for _, c := range conns {
		if c == nil {
			continue
		}
		if tc, ok := c.(*net.TCPConn); ok && rst {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
	}
}

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos: proxy listen: %w", err)
	}
	p := &Proxy{ln: ln, target: target, mode: Pass, changed: make(chan struct{}), links: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Mode returns the current mode and delay.
func (p *Proxy) Mode() (Mode, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.delay
}

// Set switches the mode; delay is used by Delay only. Switching to Reset
// resets every open connection at once.
func (p *Proxy) Set(m Mode, delay time.Duration) {
	p.mu.Lock()
	p.mode, p.delay = m, delay
	close(p.changed)
	p.changed = make(chan struct{})
	var reset []*link
	if m == Reset {
		for l := range p.links {
			reset = append(reset, l)
		}
	}
	p.mu.Unlock()
	for _, l := range reset {
		l.close(true)
	}
}

// state returns the mode, the delay and a channel closed on the next change.
func (p *Proxy) state() (Mode, time.Duration, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.delay, p.changed
}

// Close stops listening, closes every connection and waits for every
// goroutine of the proxy.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, l := range links {
		l.close(false)
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		mode, _, _ := p.state()
		if mode == Reset {
			newLink(c).close(true)
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve dials the backend (after the partition heals, in Blackhole) and
// pumps both directions.
func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	l := newLink(c)
	if !p.track(l) {
		l.close(false)
		return
	}
	defer p.untrack(l)
	// A blackholed SYN is not answered: wait for the partition to heal.
	for {
		mode, _, changed := p.state()
		if mode != Blackhole {
			break
		}
		select {
		case <-changed:
		case <-l.done:
			return
		}
	}
	s, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		l.close(true)
		return
	}
	if !l.setServer(s) { // closed or reset while dialling
		_ = s.Close()
		return
	}
	if mode, _, _ := p.state(); mode == Reset {
		l.close(true)
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pump(l, c, s) }()
	go func() { defer wg.Done(); p.pump(l, s, c) }()
	wg.Wait()
	l.close(false)
}

func (p *Proxy) track(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.links[l] = struct{}{}
	return true
}

func (p *Proxy) untrack(l *link) {
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}

type chunk struct {
	data []byte
	at   time.Time
}

// pump copies src to dst through a queue so that delayed and held chunks
// keep their order while reading goes on.
func (p *Proxy) pump(l *link, src, dst net.Conn) {
	q := make(chan chunk, 1024)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(q)
		for {
			buf := make([]byte, 32*1024)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{buf[:n], time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	for ch := range q {
		if !p.release(l, ch) {
			l.close(true)
			break
		}
		if _, err := dst.Write(ch.data); err != nil {
			l.close(false)
			break
		}
	}
	l.close(false)
	for range q { // unblock the reader after the link closed
	}
	wg.Wait()
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// release waits until ch may be written under the current mode; false
// means the link must be reset.
func (p *Proxy) release(l *link, ch chunk) bool {
	for {
		mode, delay, changed := p.state()
		switch mode {
		case Pass:
			return true
		case Reset:
			return false
		case Blackhole:
			select {
			case <-changed:
			case <-l.done:
				return false
			}
		case Delay:
			wait := time.Until(ch.at.Add(delay))
			if wait <= 0 {
				return true
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				return true
			case <-changed:
				t.Stop()
			case <-l.done:
				t.Stop()
				return false
			}
		}
	}
}
