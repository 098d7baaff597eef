package leadershipfx_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
)

// memoryProvider chooses the memory lock (G6: there is no default).
const memoryProvider = "HOSTLOOM_LOCKING__PROVIDER=memory"

// env builds a config module from environment entries, with the memory
// provider unless an entry chooses one.
func env(vars ...string) fx.Option {
	for _, v := range vars {
		if strings.HasPrefix(v, "HOSTLOOM_LOCKING__PROVIDER=") {
			return config.Module("", config.WithEnviron(vars))
		}
	}
	return config.Module("", config.WithEnviron(append([]string{memoryProvider}, vars...)))
}

// memLock is a memory lock for apps built without lockingfx (call it
// inside the synctest bubble when the test uses one).
func memLock(t *testing.T) *locking.DistributedLock {
	t.Helper()
	l, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// supplyLock supplies l as the app's locking.Lock.
func supplyLock(l *locking.DistributedLock) fx.Option {
	return fx.Supply(fx.Annotate(l, fx.As(new(locking.Lock))))
}

// held reports whether anyone holds role's lease in l.
func held(t *testing.T, l *locking.DistributedLock, role string) bool {
	t.Helper()
	_, ok, err := l.Holder(context.Background(), "leader:"+role)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// twoRoles is what the F1 tests populate: the roles billing and reports.
type twoRoles struct {
	fx.In
	Billing  leadership.Leadership `name:"billing"`
	BillingE *leadership.Elector   `name:"billing"`
	Reports  leadership.Leadership `name:"reports"`
	All      []*leadership.Elector `group:"hostloom.electors"`
}

// leadThenRelease starts app, in a synctest bubble, and stops it (F1):
// billing does not lead before the start; once the first attempts ran
// (E1), billing leads in term 1 and reports leads, and leading checks
// what else the test expects of the started app; after the stop neither
// role leads and billing's token has ended (E8).
func (got *twoRoles) leadThenRelease(t *testing.T, app *fxtest.App, leading func()) {
	t.Helper()
	if got.Billing.IsLeader() {
		t.Fatal("leads before start")
	}
	app.RequireStart()
	synctest.Wait() // the first attempt is immediate (E1)
	if !got.Billing.IsLeader() || !got.Reports.IsLeader() || got.Billing.Term() != 1 {
		t.Fatalf("billing leader=%t term=%d, reports leader=%t", got.Billing.IsLeader(), got.Billing.Term(), got.Reports.IsLeader())
	}
	leading()
	tok := got.Billing.Token()
	app.RequireStop()
	if got.Billing.IsLeader() || got.Reports.IsLeader() || tok.Err() == nil {
		t.Fatalf("after stop: leader=%t token err=%v (E8)", got.Billing.IsLeader(), tok.Err())
	}
}
