package k8slock_test

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/hostloom/hostloom/bench/internal/k8slock"
	"github.com/hostloom/hostloom/bench/internal/redisproc"
	"github.com/redis/go-redis/v9"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	s, err := redisproc.Start("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func record(holder string) resourcelock.LeaderElectionRecord {
	now := metav1.NewTime(time.Now())
	return resourcelock.LeaderElectionRecord{HolderIdentity: holder, LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now}
}

// TestLock_CompareAndSwap checks the semantics client-go relies on: NotFound
// before creation, a single winner for Create, and Update refused once
// someone else changed the record since this lock last observed it.
func TestLock_CompareAndSwap(t *testing.T) {
	ctx := context.Background()
	c := startRedis(t)
	a := k8slock.New(c, "leader:role", "a")
	b := k8slock.New(c, "leader:role", "b")

	if _, _, err := a.Get(ctx); !apierrors.IsNotFound(err) {
		t.Fatalf("Get before Create: got %v, want NotFound", err)
	}
	if err := a.Create(ctx, record("a")); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := b.Create(ctx, record("b")); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second Create: got %v, want AlreadyExists", err)
	}
	rec, raw, err := b.Get(ctx)
	if err != nil || rec.HolderIdentity != "a" || len(raw) == 0 {
		t.Fatalf("Get: %+v %q %v", rec, raw, err)
	}
	// a renews: its observed version is current.
	if err := a.Update(ctx, record("a")); err != nil {
		t.Fatalf("Update by a: %v", err)
	}
	// b's observed version is now stale.
	if err := b.Update(ctx, record("b")); !errors.Is(err, k8slock.ErrConflict) {
		t.Fatalf("stale Update by b: got %v, want ErrConflict", err)
	}
	if _, _, err := b.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Update(ctx, record("b")); err != nil {
		t.Fatalf("Update by b after Get: %v", err)
	}
	rec, _, err = a.Get(ctx)
	if err != nil || rec.HolderIdentity != "b" {
		t.Fatalf("after b's Update: %+v %v", rec, err)
	}
	if err := k8slock.New(c, "other", "x").Update(ctx, record("x")); err == nil {
		t.Fatal("Update before Get or Create succeeded")
	}
}
