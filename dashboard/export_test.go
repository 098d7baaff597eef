package dashboard

import "context"

// SetHandOver replaces the lock's hand-over request, for tests of a
// branch of HostLoom whose lock may not have one.
func SetHandOver(d *Dashboard, f func(ctx context.Context, key, owner, target string) error) {
	d.handOver = f
	d.forget()
}
