package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
)

// etcd is the private three-member etcd cluster of the test run, started
// by the first test that needs it and stopped by TestMain.
var etcd struct {
	once    sync.Once
	cluster *etcdtest.Cluster
	err     error
	shared  etcdtest.Shared // NewPrefix only
}

// etcdEndpoints returns the cluster's endpoints and a fresh key prefix.
// Without a server binary it skips t (fails it when etcdtest.Required).
func etcdEndpoints(t *testing.T) (string, string) {
	t.Helper()
	etcd.once.Do(func() { etcd.cluster, etcd.err = etcdtest.Launch(etcdtest.Options{}) })
	if etcd.err != nil {
		if etcdtest.Required() {
			t.Fatalf("etcd is required here (CI or HOSTLOOM_REQUIRE_ETCD=1) but did not start: %v", etcd.err)
		}
		t.Skipf("etcd did not start, skipping: %v", etcd.err)
	}
	return strings.Join(etcd.cluster.Endpoints(), ","), etcd.shared.NewPrefix(t.Name())
}

// TestApp_N1_EtcdLeadsAndServes boots the service over a real
// three-member etcd cluster with the provider, endpoints and prefix set:
// both roles lead over etcdlock, /leadership shows the holder and
// participants etcd stores, /jobs the job's records, and the dashboard's
// roles and jobs pages show them too.
func TestApp_N1_EtcdLeadsAndServes(t *testing.T) {
	eps, prefix := etcdEndpoints(t)
	ctx, base, got, logs := startLeading(t, zapcore.DebugLevel, 30*time.Second,
		"HOSTLOOM_LOCKING__PROVIDER=etcd",
		"HOSTLOOM_LOCKING__ETCD__ENDPOINTS="+eps,
		"HOSTLOOM_LOCKING__ETCD__PREFIX="+prefix,
	)
	checkBackendLeadership(t, base)
	checkJobsPage(t, ctx, base, got)

	code, page := get(t, base+"/dashboard/roles")
	if code != 200 {
		t.Fatalf("/dashboard/roles: %d\n%s", code, page)
	}
	for _, want := range []string{"billing", "inventory", got.BillingElector.Identity()} {
		if !strings.Contains(page, want) {
			t.Errorf("/dashboard/roles lacks %q:\n%s", want, page)
		}
	}
	code, page = get(t, base+"/dashboard/jobs")
	if code != 200 || !strings.Contains(page, "invoices") {
		t.Errorf("/dashboard/jobs: %d, lacks the invoices job:\n%s", code, page)
	}
	ex := logs.FilterMessage("HostLoomExample").All()
	if len(ex) != 1 || ex[0].ContextMap()["provider"] != "etcd" {
		t.Errorf("HostLoomExample lines: %v", ex)
	}
}
