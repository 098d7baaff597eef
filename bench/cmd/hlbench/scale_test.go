package main

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hostloom/hostloom/bench/internal/redisproc"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// The test binary doubles as the replica, as hlbench does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == replicaCmd {
		os.Exit(runReplica(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// A tiny scale run over replica processes: the fleet converges after the
// start, a join and a leave (B1), the figures are sane, and every replica
// process has exited when runScale returns.
func TestScale_B1_ReplicaProcessesConvergeAndExit(t *testing.T) {
	srv, err := redisproc.Start("")
	if errors.Is(err, redistest.ErrNoServer) && !redistest.Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	cfg := shortConfig()
	cfg.scaleRoles, cfg.scaleReplicas, cfg.scaleJoins = 12, 3, 2
	cfg.scaleWindow = 500 * time.Millisecond

	res, err := runScale(context.Background(), cfg, srv.Addr(), admin)
	if err != nil {
		t.Fatal(err)
	}
	rep := &report{cfg: cfg, scale: &res}
	if err := rep.scaleSane(); err != nil {
		t.Fatal(err)
	}
	if len(res.Joins) != 2 || len(res.Leaves) != 1 {
		t.Fatalf("%d joins, %d leaves; want 2 and 1", len(res.Joins), len(res.Leaves))
	}
	for _, m := range res.Joins {
		var total int64
		for _, n := range m.Leads {
			if n > 4 { // ceil(12/3)
				t.Errorf("after a join a replica leads %d of 12 roles over 3 replicas: %v", n, m.Leads)
			}
			total += n
		}
		if total != 12 || m.ByReplica[len(m.ByReplica)-1] == 0 || m.Acquired < m.Minimum {
			t.Errorf("join: leads %v, acquisitions %v (minimum %d); want all 12 led, the joiner acquiring", m.Leads, m.ByReplica, m.Minimum)
		}
	}
	if res.Unbalanced == nil || res.Unbalanced.ReqPerSec <= 0 {
		t.Fatalf("no load measured without Balance: %+v", res.Unbalanced)
	}
	if runtime.GOOS == "linux" && (res.Unbalanced.ClientCPU <= 0 || res.Unbalanced.ClientCPU > float64(runtime.NumCPU())) {
		t.Fatalf("the replicas' CPU without Balance: %.3f cores; want more than 0 and at most %d", res.Unbalanced.ClientCPU, runtime.NumCPU())
	}
}

// close stops every replica through its stdin: each exits on its own with
// status 0, none is killed, and a second close does nothing.
func TestScale_FleetCloseLeavesNoProcess(t *testing.T) {
	srv, err := redisproc.Start("")
	if errors.Is(err, redistest.ErrNoServer) && !redistest.Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f := &scaleFleet{bin: bin, addr: srv.Addr(), ns: "close-test", roles: 5, s: fastSettings, balance: true}
	defer f.close()
	for _, name := range []string{"a", "b"} {
		if _, err := f.spawn(name); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.waitReady(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := f.waitConverged(true, 10*time.Second, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := f.close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range f.procs {
		select {
		case <-p.exited:
		default:
			t.Fatalf("replica %s still runs after close", p.name)
		}
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("replica %s exited with %d, want 0", p.name, code)
		}
	}
	if err := f.close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}
