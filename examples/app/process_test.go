package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/testing/redistest"
)

// proc is one example process started by a test.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	addr chan string // receives the HTTP address once

	mu    sync.Mutex
	lines []string
	done  chan struct{} // closed when stderr is drained
}

// startProc starts the binary with env added to a minimal environment and
// reads its JSON log.
func startProc(t *testing.T, bin, name string, env ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, "-http", "127.0.0.1:0", "-log-format", "json")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, name: name, cmd: cmd, addr: make(chan string, 1), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
			var entry struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "HTTPListening" {
				p.addr <- entry.Addr
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		<-p.done
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.log())
		}
	})
	return p
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// baseURL waits for the process to listen.
func (p *proc) baseURL() string {
	p.t.Helper()
	select {
	case a := <-p.addr:
		p.addr <- a
		return "http://" + a
	case <-time.After(30 * time.Second):
		p.t.Fatalf("%s did not start listening:\n%s", p.name, p.log())
		return ""
	}
}

// status reads /leadership, keyed by role.
func (p *proc) status() (map[string]roleStatus, error) {
	resp, err := http.Get(p.baseURL() + "/leadership")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list []roleStatus
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, err
	}
	out := map[string]roleStatus{}
	for _, s := range list {
		out[s.Role] = s
	}
	return out, nil
}

// jobs reads /jobs.
func (p *proc) jobs() ([]jobStatus, error) {
	resp, err := http.Get(p.baseURL() + "/jobs")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list []jobStatus
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, err
	}
	return list, nil
}

// sameHistory checks that every process's /jobs shows the invoices job
// with the same newest run from the shared store (S11), run by leader
// (the only process with a last run of its own).
func sameHistory(procs []*proc, leader *proc, identity string) error {
	var first *runRecord
	for _, p := range procs {
		list, err := p.jobs()
		if err != nil {
			return err
		}
		if len(list) != 1 || list[0].Name != "invoices" || len(list[0].History) == 0 || list[0].HistoryError != "" {
			return fmt.Errorf("%s: /jobs = %+v", p.name, list)
		}
		j := list[0]
		if ranHere := !j.LastRun.IsZero(); ranHere != (p == leader) {
			return fmt.Errorf("%s: last run %v, leader %s", p.name, j.LastRun, leader.name)
		}
		h := j.History[0]
		if h.Identity != identity || h.Attempt != 1 {
			return fmt.Errorf("%s: newest run %+v, want one by %s", p.name, h, identity)
		}
		if first == nil {
			first = &h
		} else if !h.Slot.Equal(first.Slot) || !h.Started.Equal(first.Started) {
			return fmt.Errorf("%s: newest run %+v, another process shows %+v", p.name, h, *first)
		}
	}
	return nil
}

// eventually polls cond every 50ms until it holds or the deadline passes.
// Processes and a real server run on real time: polling is the only way
// to observe them.
func eventually(t *testing.T, within time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// oneLeader checks that exactly one of procs leads role and that every
// process agrees on it: the backend's holder, the leader it learned
// without I/O (P2), and the role's participants (P1), which are exactly
// procs, the leader marked. It returns the leader.
func oneLeader(procs []*proc, role string) (*proc, error) {
	var leader *proc
	sts := make([]roleStatus, 0, len(procs))
	identities := make([]string, 0, len(procs))
	for _, p := range procs {
		st, err := p.status()
		if err != nil {
			return nil, err
		}
		s := st[role]
		if s.IsLeader {
			if leader != nil {
				return nil, fmt.Errorf("%s and %s both lead %s", leader.name, p.name, role)
			}
			leader = p
		}
		sts = append(sts, s)
		identities = append(identities, s.Identity)
	}
	if leader == nil {
		return nil, fmt.Errorf("nobody leads %s", role)
	}
	slices.Sort(identities)
	want := sts[slices.Index(procs, leader)].Identity
	for i, s := range sts {
		name := procs[i].name
		if s.Holder == nil || s.Holder.Identity != want {
			return nil, fmt.Errorf("%s sees holder %+v of %s, want %s (%s)", name, s.Holder, role, want, s.HolderError)
		}
		if s.Leader != want {
			return nil, fmt.Errorf("%s learned leader %q of %s, want %s", name, s.Leader, role, want)
		}
		var ids, leaders []string
		for _, pt := range s.Participants {
			ids = append(ids, pt.Identity)
			if pt.Leader {
				leaders = append(leaders, pt.Identity)
			}
		}
		slices.Sort(ids)
		if !slices.Equal(ids, identities) || !slices.Equal(leaders, []string{want}) {
			return nil, fmt.Errorf("%s sees participants %+v of %s (%s), want %q led by %s",
				name, s.Participants, role, s.ParticipantsError, identities, want)
		}
	}
	return leader, nil
}

// TestProcesses_RedisElectOneLeaderAndHandOverOnSIGTERM runs three
// example processes over a real redis-server: one leads each role, and
// every process's /leadership shows the same leader (learned, P2, and
// looked up) and the same participants (P1), and its /jobs the same
// history; SIGTERM to the leader makes it release its leases and exit 0,
// and another process takes over well before the lease (30s here) could
// have expired, its participants now the two left.
func TestProcesses_RedisElectOneLeaderAndHandOverOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example binary")
	}
	srv := redistest.Start(t)
	electAndHandOver(t, "HOSTLOOM_LOCKING__PROVIDER=redis", "HOSTLOOM_LOCKING__REDIS__ADDRS="+srv.Addr())
}

// TestProcesses_D4_PostgresElectOneLeaderAndHandOverOnSIGTERM is the same
// over a real PostgreSQL, configured with nothing but the provider and the
// DSN (the tables are created on first use).
func TestProcesses_D4_PostgresElectOneLeaderAndHandOverOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example binary")
	}
	dsn := newPostgres(t)
	electAndHandOver(t, "HOSTLOOM_LOCKING__PROVIDER=postgres", "HOSTLOOM_LOCKING__POSTGRES__DSN="+dsn)
}

// electAndHandOver runs three example processes with backend, the
// environment that selects the lock: see
// TestProcesses_RedisElectOneLeaderAndHandOverOnSIGTERM.
func electAndHandOver(t *testing.T, backend ...string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "example")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := append(backend,
		"HOSTLOOM_LEADERSHIP__LEASE=30s",
		"HOSTLOOM_LEADERSHIP__RENEW_INTERVAL=10s",
		"HOSTLOOM_LEADERSHIP__RETRY_INTERVAL=5s",
		"HOSTLOOM_LEADERSHIP__ROLES__INVENTORY__LEASE=30s",
		"HOSTLOOM_LEADERSHIP__ROLES__INVENTORY__RENEW_INTERVAL=10s",
		"HOSTLOOM_LEADERSHIP__ROLES__INVENTORY__RETRY_INTERVAL=5s",
	)
	procs := []*proc{
		startProc(t, bin, "p1", env...),
		startProc(t, bin, "p2", env...),
		startProc(t, bin, "p3", env...),
	}
	var leader *proc
	eventually(t, 20*time.Second, "one leader of billing", func() (err error) {
		leader, err = oneLeader(procs, "billing")
		return err
	})
	eventually(t, 20*time.Second, "one leader of inventory", func() error {
		_, err := oneLeader(procs, "inventory")
		return err
	})
	st, err := leader.status()
	if err != nil {
		t.Fatal(err)
	}
	// The billing leader catches the latest slot up when it wins (S8).
	eventually(t, 15*time.Second, "the invoices history on every process", func() error {
		return sameHistory(procs, leader, st["billing"].Identity)
	})

	sent := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest := make([]*proc, 0, 2)
	for _, p := range procs {
		if p != leader {
			rest = append(rest, p)
		}
	}
	// Expiry would take until ~30s after the last renewal; a release hands
	// over within one round trip and a notification.
	var next *proc
	eventually(t, 15*time.Second, "handover of billing", func() (err error) {
		next, err = oneLeader(rest, "billing")
		return err
	})
	took := time.Since(sent)
	eventually(t, 15*time.Second, "handover of inventory", func() error {
		_, err := oneLeader(rest, "inventory")
		return err
	})
	t.Logf("billing handed over from %s to %s in %v", leader.name, next.name, took)

	if err := leader.cmd.Wait(); err != nil {
		t.Fatalf("the stopped leader exited with %v, want code 0", err)
	}
	<-leader.done
	log := leader.log()
	for _, want := range []string{`"msg":"ShuttingDown"`, `"msg":"LeadershipReleased","role":"billing"`, `"msg":"Stopped"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the stopped leader's log lacks %s", want)
		}
	}
	for _, p := range rest {
		if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Errorf("%s exited with %v after SIGINT, want code 0", p.name, err)
		}
	}
}
