package chaos

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// echoServer answers every line with the same line until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func newTestProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := NewProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, bufio.NewReader(c)
}

// roundTrip writes msg and reads the echo, failing after timeout.
func roundTrip(c net.Conn, r *bufio.Reader, msg string, timeout time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	line, err := r.ReadString('\n')
	_ = c.SetReadDeadline(time.Time{})
	return line, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestProxy_Pass(t *testing.T) {
	p := newTestProxy(t)
	c, r := dial(t, p.Addr())
	for _, msg := range []string{"a", "bb", "ccc"} {
		got, err := roundTrip(c, r, msg, 5*time.Second)
		if err != nil || got != msg+"\n" {
			t.Fatalf("echo %q = %q, %v", msg, got, err)
		}
	}
}

func TestProxy_BlackholeHoldsTrafficUntilHealed(t *testing.T) {
	p := newTestProxy(t)
	c, r := dial(t, p.Addr())
	if _, err := roundTrip(c, r, "before", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Set(Blackhole, 0)
	if got, err := roundTrip(c, r, "held", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("blackholed round trip = %q, %v; want a timeout", got, err)
	}
	// A new connection is accepted but goes nowhere either.
	c2, r2 := dial(t, p.Addr())
	if got, err := roundTrip(c2, r2, "new", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("blackholed new connection = %q, %v; want a timeout", got, err)
	}
	p.Set(Pass, 0)
	// Nothing was lost: the held bytes arrive once the partition heals.
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "held\n" {
		t.Fatalf("after heal = %q, %v; want the held line", got, err)
	}
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r2.ReadString('\n'); err != nil || got != "new\n" {
		t.Fatalf("new connection after heal = %q, %v", got, err)
	}
}

func TestProxy_DelayDelaysEveryChunk(t *testing.T) {
	p := newTestProxy(t)
	c, r := dial(t, p.Addr())
	const d = 150 * time.Millisecond
	p.Set(Delay, d)
	if m, got := p.Mode(); m != Delay || got != d {
		t.Fatalf("Mode() = %v, %v", m, got)
	}
	start := time.Now()
	got, err := roundTrip(c, r, "slow", 10*time.Second)
	if err != nil || got != "slow\n" {
		t.Fatalf("delayed echo = %q, %v", got, err)
	}
	// Both directions are delayed: at least 2d.
	if el := time.Since(start); el < 2*d {
		t.Fatalf("round trip took %v, want at least %v", el, 2*d)
	}
}

func TestProxy_ResetKillsConnectionsAndRefusesNewOnes(t *testing.T) {
	p := newTestProxy(t)
	c, r := dial(t, p.Addr())
	if _, err := roundTrip(c, r, "before", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Set(Reset, 0)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err == nil || isTimeout(err) {
		t.Fatalf("read on a reset connection: %v, want a connection error", err)
	}
	// A new connection is reset: at connect, or at the first round trip.
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		defer c2.Close()
		if got, err := roundTrip(c2, bufio.NewReader(c2), "refused", 5*time.Second); err == nil || isTimeout(err) {
			t.Fatalf("new connection during reset = %q, %v; want a connection error", got, err)
		}
	}
	p.Set(Pass, 0)
	c3, r3 := dial(t, p.Addr())
	if got, err := roundTrip(c3, r3, "after", 5*time.Second); err != nil || got != "after\n" {
		t.Fatalf("after reset = %q, %v", got, err)
	}
}

func TestProxy_CloseEndsBlackholedConnections(t *testing.T) {
	p, err := NewProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c, r := dial(t, p.Addr())
	p.Set(Blackhole, 0)
	if _, err := c.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close blocked on a blackholed connection")
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err == nil || isTimeout(err) {
		t.Fatalf("read after Close: %v, want the connection closed", err)
	}
}

func TestMode_String(t *testing.T) {
	for m, want := range map[Mode]string{Pass: "pass", Blackhole: "blackhole", Delay: "delay", Reset: "reset", Mode(0): "Mode(0)"} {
		if got := m.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(m), got, want)
		}
	}
}
