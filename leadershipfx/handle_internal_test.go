package leadershipfx

import (
	"testing"
	"time"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// Roles built from one config share one copy of their options and config
// sections; a role whose options differ gets its own, and the role built
// after it does not inherit them.
func TestHandle_H1_RolesShareWhatTheyWereBuiltFrom(t *testing.T) {
	cfg := config.Defaults()
	lock, err := memlock.NewLock(locking.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := RoleParams{Lock: lock, Config: cfg.Leadership, Locking: cfg.Locking}
	slots := []*processSlot{{}}
	longer := roleSettings{adjust: []func(*leadership.Options){func(o *leadership.Options) { o.Lease = 40 * time.Second }}}
	a := newHandle("a", p, slots, roleSettings{})
	b := newHandle("b", p, slots, roleSettings{})
	c := newHandle("c", p, slots, longer)
	d := newHandle("d", p, slots, roleSettings{})
	for _, h := range []*Handle{a, b, c, d} {
		if h.err != nil {
			t.Fatalf("role %s: %v", h.name, h.err)
		}
	}
	if a.opts != b.opts || a.in != b.in {
		t.Error("roles a and b, built alike, keep a copy each")
	}
	if c.opts == a.opts || c.opts.Lease != 40*time.Second {
		t.Errorf("role c: lease %v, shared with a: %t", c.opts.Lease, c.opts == a.opts)
	}
	if d.opts.Lease != a.opts.Lease || c.in != a.in || d.in != a.in {
		t.Errorf("role d: lease %v, want %v; config sections shared: c %t, d %t", d.opts.Lease, a.opts.Lease, c.in == a.in, d.in == a.in)
	}
	other := cfg.Leadership
	other.Identity = "node-2"
	p.Config = other
	if e := newHandle("e", p, slots, roleSettings{}); e.in == a.in || e.in.cfg.Identity != "node-2" {
		t.Errorf("role e, built from another config section, shares a's: %t", e.in == a.in)
	}
}
