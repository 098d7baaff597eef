package etcdlockfx_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/backends/etcd/etcdlockfx"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
)

const secretPassword = "s3cr3t-hunter2"

// app is an fx app with one role over provider etcd and the environment
// env.
func app(t *testing.T, env []string, extra ...fx.Option) (*fx.App, *observer.ObservedLogs, *leadershipfx.Health) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	var h *leadershipfx.Health
	base := []string{"HOSTLOOM_LOCKING__PROVIDER=etcd"}
	if !slices.ContainsFunc(env, func(v string) bool { return strings.HasPrefix(v, "HOSTLOOM_LOCKING__ETCD__PREFIX=") }) {
		base = append(base, "HOSTLOOM_LOCKING__ETCD__PREFIX="+cluster.NewPrefix(t.Name()))
	}
	opts := append([]fx.Option{
		fx.NopLogger,
		fx.Supply(zap.New(core)),
		configfx.Module("", config.WithEnviron(append(append(base,
			"HOSTLOOM_LEADERSHIP__LEASE=2s",
			"HOSTLOOM_LEADERSHIP__RENEW_INTERVAL=500ms",
			"HOSTLOOM_LEADERSHIP__RETRY_INTERVAL=200ms"), env...))),
		lockingfx.Module,
		etcdlockfx.Module,
		leadershipfx.Role("billing"),
		fx.Populate(&h),
		leadershipfx.Module,
	}, extra...)
	return fx.New(opts...), logs, h
}

func endpoints(t *testing.T) string {
	t.Helper()
	return strings.Join(cluster.Cluster(t).Endpoints(), ",")
}

func leads(t *testing.T, h *leadershipfx.Health) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if len(h.Electors()) == 0 {
		t.Fatal("no electors")
	}
	for _, e := range h.Electors() {
		if err := e.WaitForLeadership(ctx); err != nil {
			t.Fatalf("role %s never led: %v", e.Role(), err)
		}
	}
}

func allLogs(logs *observer.ObservedLogs) string {
	var b strings.Builder
	for _, e := range logs.All() {
		fmt.Fprintf(&b, "%s %v\n", e.Message, e.ContextMap())
	}
	return b.String()
}

// TestModule_N1_LeadsWithProviderAndEndpoints: provider etcd with nothing
// but the endpoints: the role leads over etcdlock.
func TestModule_N1_LeadsWithProviderAndEndpoints(t *testing.T) {
	var dl *locking.DistributedLock
	a, logs, h := app(t, []string{"HOSTLOOM_LOCKING__ETCD__ENDPOINTS=" + endpoints(t)}, fx.Populate(&dl))
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	leads(t, h)
	if p, ok := etcdlock.ProviderOf(dl); !ok || p == nil {
		t.Errorf("lock is not over etcdlock: %T", dl.Provider())
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if logs.FilterMessage("HostLoomLockUnreachable").Len() != 0 {
		t.Errorf("reachable cluster reported unreachable:\n%s", allLogs(logs))
	}
}

// TestModule_N1_UsesTheAppsClient: the graph's client is used as it is,
// and stays open after the app stops.
func TestModule_N1_UsesTheAppsClient(t *testing.T) {
	cl, err := cluster.Cluster(t).Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	a, _, h := app(t, nil, fx.Supply(cl))
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	leads(t, h)
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Get(ctx, "x"); err != nil {
		t.Errorf("the app's client was closed: %v", err)
	}
}

// TestModule_N1_UnreachableEndpointsDoNotFailStart: with nothing at the
// endpoints, start succeeds, nobody leads, and the outage is logged once.
func TestModule_N1_UnreachableEndpointsDoNotFailStart(t *testing.T) {
	a, logs, h := app(t, []string{"HOSTLOOM_LOCKING__ETCD__ENDPOINTS=127.0.0.1:1", "HOSTLOOM_LOCKING__ETCD__DIAL_TIMEOUT=300ms"})
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatalf("start with unreachable endpoints = %v, want nil", err)
	}
	defer func() { _ = a.Stop(ctx) }()
	if n := logs.FilterMessage("HostLoomLockUnreachable").Len(); n != 1 {
		t.Errorf("HostLoomLockUnreachable logged %d times, want once:\n%s", n, allLogs(logs))
	}
	for _, e := range h.Electors() {
		if e.IsLeader() {
			t.Fatal("leads without a reachable cluster")
		}
	}
}

// TestModule_N1_RefusedCredentialsFailStart: over a cluster with
// authentication on, a wrong password fails start naming
// locking.etcd.password and its source, never the password; the right
// one leads.
func TestModule_N1_RefusedCredentialsFailStart(t *testing.T) {
	c := withAuth(t)
	ctx := context.Background()
	eps := strings.Join(c.Endpoints(), ",")
	env := []string{"HOSTLOOM_LOCKING__ETCD__ENDPOINTS=" + eps, "HOSTLOOM_LOCKING__ETCD__USERNAME=svc", "HOSTLOOM_LOCKING__ETCD__PREFIX=app/"}
	a, logs, _ := app(t, append(env, "HOSTLOOM_LOCKING__ETCD__PASSWORD=wrong-"+secretPassword))
	err := a.Err()
	if err == nil {
		err = a.Start(ctx)
		if err == nil {
			_ = a.Stop(ctx)
		}
	}
	var fe *config.FieldError
	if !errors.As(err, &fe) || fe.Key != "locking.etcd.password" || fe.Source != "env HOSTLOOM_LOCKING__ETCD__PASSWORD" {
		t.Fatalf("start with a wrong password = %v, want a FieldError for locking.etcd.password from its env variable", err)
	}
	for _, s := range []string{err.Error(), allLogs(logs)} {
		if strings.Contains(s, secretPassword) {
			t.Errorf("the password shows: %s", s)
		}
	}
	a, _, h := app(t, append(env, "HOSTLOOM_LOCKING__ETCD__PASSWORD="+secretPassword))
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	leads(t, h)
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// withAuth starts a cluster of the test's own with authentication on: user
// svc (password secretPassword) may read and write the prefix app/.
func withAuth(t *testing.T) *etcdtest.Cluster {
	t.Helper()
	c := etcdtest.Start(t, etcdtest.Options{})
	if err := c.EnableAuth(context.Background(), "svc", secretPassword, "app/"); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestModule_N1_UnreachableWithCredentialsDoesNotFailStart: with a
// username and password and no member answering, start succeeds (the
// client authenticates on first use, not while it is built), nobody
// leads, and the outage is logged once; once the members are back, the
// credentials are used and the role leads.
func TestModule_N1_UnreachableWithCredentialsDoesNotFailStart(t *testing.T) {
	c := withAuth(t)
	for _, m := range c.Members() {
		m.Kill()
	}
	a, logs, h := app(t, []string{
		"HOSTLOOM_LOCKING__ETCD__ENDPOINTS=" + strings.Join(c.Endpoints(), ","),
		"HOSTLOOM_LOCKING__ETCD__USERNAME=svc", "HOSTLOOM_LOCKING__ETCD__PASSWORD=" + secretPassword,
		"HOSTLOOM_LOCKING__ETCD__PREFIX=app/", "HOSTLOOM_LOCKING__ETCD__DIAL_TIMEOUT=300ms"})
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatalf("start with unreachable endpoints and credentials = %v, want nil", err)
	}
	defer func() { _ = a.Stop(ctx) }()
	if n := logs.FilterMessage("HostLoomLockUnreachable").Len(); n != 1 {
		t.Errorf("HostLoomLockUnreachable logged %d times, want once:\n%s", n, allLogs(logs))
	}
	for _, e := range h.Electors() {
		if e.IsLeader() {
			t.Fatal("leads without a reachable cluster")
		}
	}
	for _, m := range c.Members() {
		if err := m.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	leads(t, h)
	if n := logs.FilterMessage("HostLoomLockAuthFailed").Len(); n != 0 {
		t.Errorf("the right credentials were refused:\n%s", allLogs(logs))
	}
	for _, s := range []string{allLogs(logs)} {
		if strings.Contains(s, secretPassword) {
			t.Errorf("the password shows: %s", s)
		}
	}
}
