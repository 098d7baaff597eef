package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostloom/hostloom/core/locking/etcdlock/etcdtest"
)

// knownDefectsEnv names the environment variable that runs the tests of
// defects of the etcd server itself, which the provider cannot close:
// they fail while the server has the defect, so CI leaves them out; run
// them to check an etcd release.
const knownDefectsEnv = "HOSTLOOM_ETCD_KNOWN_DEFECTS"

// TestServer_N4_PausedLeaderRevokesNoLiveLease: a lease kept alive through
// the healthy members while the raft leader is stopped (SIGSTOP) must
// outlive every acknowledged keep-alive by its TTL after the leader
// resumes (SIGCONT). etcd 3.6 and 3.7 break it: the resumed member's
// lessor still counts itself primary, finds every lease expired by its own
// clock (none was renewed on it during the stop), and its check that it
// still leads before revoking is skipped because its raft clock ticked
// just now (the tick that was due during the stop runs at once on
// resume). The revocations it proposes once it has stepped down reach the
// new leader and are applied: each lease ends up to a TTL earlier than its
// holder was told, and a successor takes the key while the holder still
// believes it holds it. Sent as the stale leader instead, they time out
// (the request timeout, 5 s plus two election timeouts) and the rest of
// the batch goes out then. The provider cannot tell such a revocation from
// a release; see the package README.
func TestServer_N4_PausedLeaderRevokesNoLiveLease(t *testing.T) {
	if os.Getenv(knownDefectsEnv) != "1" {
		t.Skipf("a defect of the etcd server (revocations by a resumed ex-leader): set %s=1 to run it", knownDefectsEnv)
	}
	c := etcdtest.Start(t, etcdtest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const (
		rounds = 3
		leases = 100
		every  = 200 * time.Millisecond // keep-alive cadence, a fifth of the TTL
		paused = 1800 * time.Millisecond
		after  = 8 * time.Second // beyond the request timeout, for the late batch
	)
	var early []string
	for round := range rounds {
		leader, err := c.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var healthy []string
		for _, m := range c.Members() {
			if m != leader {
				healthy = append(healthy, m.Endpoint())
			}
		}
		cl, err := etcdtest.NewClient(healthy...)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]clientv3.LeaseID, leases)
		for i := range ids {
			g, err := cl.Grant(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = g.ID
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, id := range ids {
			wg.Go(func() {
				acked := time.Now() // the grant's send time bounds it from below
				for {
					select {
					case <-stop:
						return
					case <-time.After(every):
					}
					kctx, kcancel := context.WithTimeout(ctx, 2*every)
					sent := time.Now()
					r, err := cl.KeepAliveOnce(kctx, id)
					kcancel()
					switch {
					case err == nil:
						acked = sent.Add(time.Duration(r.TTL) * time.Second)
					case errors.Is(err, rpctypes.ErrLeaseNotFound):
						if gone := time.Now(); gone.Before(acked) {
							mu.Lock()
							early = append(early, fmt.Sprintf("round %d: lease %x gone %v before its last acknowledged keep-alive ran out", round, id, acked.Sub(gone)))
							mu.Unlock()
						}
						return
					}
				}
			})
		}
		time.Sleep(3 * every)
		if err := leader.Pause(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(paused)
		if err := leader.Resume(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(after)
		close(stop)
		wg.Wait()
		_ = cl.Close()
	}
	if len(early) > 0 {
		n := min(len(early), 5)
		t.Fatalf("%d of %d leases kept alive through the healthy members were revoked early after the leader resumed; first %d:\n%s", len(early), rounds*leases, n, strings.Join(early[:n], "\n"))
	}
}
