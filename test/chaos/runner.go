//go:build unix

package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// BuildReplica builds the replica program into dir and returns its path.
// With race set it is built with the race detector.
func BuildReplica(ctx context.Context, dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "replica")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "github.com/hostloom/hostloom/test/chaos/replica")
	cmd := exec.CommandContext(ctx, "go", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("chaos: go build replica: %w\n%s", err, out)
	}
	return bin, nil
}

// proc is one incarnation of a replica process.
type proc struct {
	inc  Incarnation
	cmd  *exec.Cmd
	done chan struct{} // closed once reaped and inc completed
}

// fleet owns the replica processes: every process it starts is reaped by a
// goroutine it waits for.
type fleet struct {
	bin   string
	dir   string
	cfg   Config
	addrs func(i int) string // Redis address(es) replica i connects to
	// effects is the address of the effects store (never faulted).
	effects string

	mu    sync.Mutex
	procs []*proc // current incarnation per replica (nil when down)
	count []int   // incarnations started per replica
	past  []Incarnation
	wg    sync.WaitGroup
}

func newFleet(bin, dir string, cfg Config, addrs func(int) string, effects string) *fleet {
	return &fleet{bin: bin, dir: dir, cfg: cfg, addrs: addrs, effects: effects, procs: make([]*proc, cfg.Replicas), count: make([]int, cfg.Replicas)}
}

// start launches a new incarnation of replica i.
func (f *fleet) start(i int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.procs[i] != nil {
		return "", fmt.Errorf("chaos: replica %d already runs", i)
	}
	f.count[i]++
	id := fmt.Sprintf("r%d.%d", i, f.count[i])
	args := []string{
		"-replica", strconv.Itoa(i), "-id", id, "-addrs", f.addrs(i),
		"-roles", strconv.Itoa(f.cfg.Roles),
		"-lease", f.cfg.Lease.String(), "-renew", f.cfg.RenewInterval.String(), "-retry", f.cfg.RetryInterval.String(),
		"-slice", f.cfg.Slice.String(), "-effects", f.effects,
		"-out", filepath.Join(f.dir, fmt.Sprintf("r%d.jsonl", i)),
	}
	if f.cfg.Cluster {
		args = append(args, "-cluster")
	}
	if f.cfg.Sentinel {
		args = append(args, "-sentinel", SentinelMaster)
	}
	if f.cfg.Quarantine {
		args = append(args, "-quarantine")
	}
	if f.cfg.Postgres {
		args = append(args, "-postgres")
	}
	if f.cfg.Etcd {
		args = append(args, "-etcd")
		if f.cfg.EtcdExpiryQuarantine {
			args = append(args, "-etcd-expiry-quarantine")
		}
	}
	if f.cfg.Process {
		args = append(args, "-process")
		if f.cfg.Balance {
			args = append(args, "-balance")
		}
	}
	if f.cfg.MinReplicas > 0 {
		args = append(args, "-min-replicas", strconv.Itoa(f.cfg.MinReplicas))
	}
	logf, err := os.OpenFile(filepath.Join(f.dir, fmt.Sprintf("r%d.log", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", fmt.Errorf("chaos: replica log: %w", err)
	}
	cmd := exec.Command(f.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return "", fmt.Errorf("chaos: start replica %d: %w", i, err)
	}
	p := &proc{inc: Incarnation{Identity: id, Replica: i, PID: cmd.Process.Pid, Start: time.Now()}, cmd: cmd, done: make(chan struct{})}
	f.procs[i] = p
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		err := cmd.Wait()
		_ = logf.Close()
		f.mu.Lock()
		p.inc.End = time.Now()
		p.inc.OK = err == nil
		p.inc.Exit = cmd.ProcessState.String()
		f.past = append(f.past, p.inc)
		if f.procs[i] == p {
			f.procs[i] = nil
		}
		f.mu.Unlock()
		close(p.done)
	}()
	return id, nil
}

// current returns replica i's running incarnation, nil when down.
func (f *fleet) current(i int) *proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.procs[i]
}

// kill sends SIGKILL to replica i and waits for it; it returns the
// identity killed.
func (f *fleet) kill(i int) (string, error) {
	f.mu.Lock()
	p := f.procs[i]
	if p == nil {
		f.mu.Unlock()
		return "", fmt.Errorf("chaos: replica %d is down", i)
	}
	p.inc.Killed = true
	f.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	return p.inc.Identity, nil
}

// restart asks replica i to shut down (SIGTERM), waits for it to exit,
// at most timeout (then kills it; the incarnation counts as failed to
// stop), and starts its next incarnation. It returns the identities
// stopped and started.
func (f *fleet) restart(i int, timeout time.Duration) (string, string, error) {
	f.mu.Lock()
	p := f.procs[i]
	if p == nil {
		f.mu.Unlock()
		return "", "", fmt.Errorf("chaos: replica %d is down", i)
	}
	p.inc.Stopped = true
	f.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
	id, err := f.start(i)
	return p.inc.Identity, id, err
}

// signal sends sig to replica i's process.
func (f *fleet) signal(i int, sig syscall.Signal) (string, error) {
	p := f.current(i)
	if p == nil {
		return "", fmt.Errorf("chaos: replica %d is down", i)
	}
	return p.inc.Identity, p.cmd.Process.Signal(sig)
}

// stopAll asks every replica to shut down (SIGTERM, after SIGCONT in case
// it is paused) and waits; a replica still running after timeout is
// killed and counts as failed to stop.
func (f *fleet) stopAll(timeout time.Duration) {
	f.mu.Lock()
	var ps []*proc
	for _, p := range f.procs {
		if p != nil {
			p.inc.Stopped = true
			ps = append(ps, p)
		}
	}
	f.mu.Unlock()
	for _, p := range ps {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(timeout)
	for _, p := range ps {
		select {
		case <-p.done:
		case <-deadline:
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
	}
	f.wg.Wait()
}

// incarnations returns every finished incarnation.
func (f *fleet) incarnations() []Incarnation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Incarnation(nil), f.past...)
}

// replicaOf parses the replica index out of an identity "rI.N".
func replicaOf(identity string) (int, bool) {
	s, ok := strings.CutPrefix(identity, "r")
	if !ok {
		return 0, false
	}
	s, _, ok = strings.Cut(s, ".")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil
}
