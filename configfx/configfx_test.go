package configfx_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
)

func TestModule_ProvidesSections(t *testing.T) {
	path := writeFile(t, "locking:\n  provider: memory\nleadership:\n  lease: 20s\nleader_channel:\n  capacity: 7\n")
	var (
		c  *config.Config
		ld config.LeadershipConfig
		lc config.LeaderChannelConfig
		lk config.LockingConfig
		sc config.SchedulingConfig
	)
	fxtest.New(t,
		configfx.Module(path, config.WithEnviron([]string{"HOSTLOOM_LOCKING__NAMESPACE=ns"})),
		fx.Populate(&c, &ld, &lc, &lk, &sc),
	).RequireStart().RequireStop()
	if ld.Lease != 20*time.Second || lc.Capacity != 7 || lk.Namespace != "ns" || c.Leadership.Lease != ld.Lease || sc.Location != "UTC" {
		t.Fatalf("sections: %+v %+v %+v %+v", ld, lc, lk, sc)
	}
}

func TestModule_LoadErrorFailsTheApp(t *testing.T) {
	app := fx.New(
		fx.NopLogger,
		configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LEADERSHIP__LEASE=banana", "HOSTLOOM_LOCKING__PROVIDER=memory"})),
		fx.Invoke(func(config.LeadershipConfig) {}),
	)
	err := app.Err()
	if err == nil || !strings.Contains(err.Error(), `config: leadership.lease: invalid duration "banana" (use a unit, e.g. 15s, 500ms, 1m30s) (env HOSTLOOM_LEADERSHIP__LEASE)`) {
		t.Fatalf("app.Err() = %v", err)
	}
}

func TestSupply(t *testing.T) {
	in := config.Defaults()
	in.Locking.Namespace = "supplied"
	var lk config.LockingConfig
	fxtest.New(t, configfx.Supply(in), fx.Populate(&lk)).RequireStart().RequireStop()
	if lk.Namespace != "supplied" {
		t.Fatalf("namespace %q", lk.Namespace)
	}
}

// writeFile writes a YAML file into a fresh temporary directory.
func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
