package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/dashboard"
)

// inspectOnly is a provider with the required methods and holder
// inspection, and nothing else: no resign requests, no job records.
type inspectOnly struct{ p *memlock.Provider }

func (i inspectOnly) Acquire(ctx context.Context, r locking.AcquireRequest) (locking.AcquireResult, error) {
	return i.p.Acquire(ctx, r)
}
func (i inspectOnly) Extend(ctx context.Context, r locking.ExtendRequest) (locking.ExtendResult, error) {
	return i.p.Extend(ctx, r)
}
func (i inspectOnly) Release(ctx context.Context, r locking.ReleaseRequest) (bool, error) {
	return i.p.Release(ctx, r)
}
func (i inspectOnly) Inspect(ctx context.Context, key string) (locking.ProviderKeyState, error) {
	return i.p.Inspect(ctx, key)
}
func (i inspectOnly) Keys(ctx context.Context, prefix string) ([]string, error) {
	return i.p.Keys(ctx, prefix)
}

// An action the lock cannot carry says so and changes nothing: resign of
// a leader in another process without resign requests, pause without job
// records.
func TestDashboard_W2_ActionTheLockCannotCarrySaysSo(t *testing.T) {
	lock, err := locking.New(inspectOnly{memlock.New()}, locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	ctx := context.Background()
	// The leader runs in "another process": an elector the dashboard is
	// not given.
	other, err := leadership.NewElector("billing", lock, leadership.DefaultOptions(), leadership.WithIdentity("elsewhere"))
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer other.Stop(ctx)
	if err := other.WaitForLeadership(ctx); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, lock: lock}
	f.dash, err = dashboard.New(dashboard.Options{
		Lock: lock, Credential: secret,
		ListRoles: func(context.Context) ([]dashboard.RoleRef, error) {
			return []dashboard.RoleRef{{Role: "billing", Key: "leader:billing"}}, nil
		},
		ListJobs: func(context.Context) ([]dashboard.JobRef, error) {
			return []dashboard.JobRef{{Role: "billing", Job: "invoices"}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.dash.Close()
	f.serve()
	c := f.client()
	csrf := f.signIn(c, "alice")
	_, page := f.get(c, "roles")
	if !strings.Contains(page, `data-leader="elsewhere"`) || !strings.Contains(page, "cannot send resign requests") || strings.Contains(page, "action/resign") {
		t.Errorf("roles page over a lock without resign requests:\n%s", page)
	}
	status, body := f.post(c, "action/resign", url.Values{"csrf": {csrf}, "role": {"billing"},
		"fence": {strconv.FormatUint(other.Fence(), 10)}, "leader": {"elsewhere"}}, nil)
	if status != http.StatusNotImplemented || !strings.Contains(body, "cannot send resign requests") {
		t.Errorf("resign: status %d:\n%s", status, body)
	}
	status, body = f.post(c, "action/pause", url.Values{"csrf": {csrf}, "role": {"billing"}, "job": {"invoices"}}, nil)
	if status != http.StatusNotImplemented || !strings.Contains(body, "keeps no job records") {
		t.Errorf("pause: status %d:\n%s", status, body)
	}
	if !other.IsLeader() {
		t.Error("the leader stepped down")
	}
	_, jobs := f.get(c, "jobs")
	if !strings.Contains(jobs, "keeps no job records") {
		t.Errorf("jobs page:\n%s", jobs)
	}
}

// Pages open at the same time share one backend read per half refresh
// interval; an action's effect shows at once.
func TestDashboard_W1_OpenPagesShareReads(t *testing.T) {
	lock, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	var mu sync.Mutex
	now := time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)
	reads := 0
	f := &fixture{t: t, lock: lock}
	f.dash, err = dashboard.New(dashboard.Options{
		Lock: lock, Credential: secret, Refresh: 2 * time.Second,
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		ListRoles: func(context.Context) ([]dashboard.RoleRef, error) {
			mu.Lock()
			defer mu.Unlock()
			reads++
			return []dashboard.RoleRef{{Role: "billing", Key: "leader:billing"}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.dash.Close()
	f.serve()
	count := func() int { mu.Lock(); defer mu.Unlock(); return reads }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	for range 3 { // three operators' pages
		f.get(f.client(), "fragment/roles")
	}
	if n := count(); n != 1 {
		t.Fatalf("three pages within half a refresh read the backend %d times, want 1", n)
	}
	advance(time.Second)
	f.get(f.client(), "fragment/roles")
	if n := count(); n != 2 {
		t.Fatalf("a page half a refresh later read %d times in all, want 2", n)
	}
	advance(999 * time.Millisecond)
	f.get(f.client(), "fragment/roles")
	if n := count(); n != 2 {
		t.Fatalf("within half a refresh of the second read: %d reads, want 2", n)
	}
}
