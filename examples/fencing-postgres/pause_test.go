package fencingpg_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/fencing"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	fencingpg "github.com/hostloom/hostloom/examples/fencing-postgres"
)

// childDSN names the environment variable that makes this test binary the
// paused leader's process (TestPausedLeaderChild) on that database.
const childDSN = "FENCINGPG_CHILD_DSN"

// electorOpts: a one-second lease, for a quick takeover in real time.
func electorOpts() leadership.Options {
	o := leadership.DefaultOptions()
	o.Lease, o.RenewInterval, o.RetryInterval = time.Second, 300*time.Millisecond, 300*time.Millisecond
	return o
}

// newElector starts an elector for role "reports" over a new pglock
// provider on pool; it is stopped and the provider closed when t ends (or
// by the caller).
func newElector(tb testing.TB, pool *pgxpool.Pool, identity string) (*leadership.Elector, *pglock.Provider, *locking.DistributedLock) {
	tb.Helper()
	lo := locking.DefaultOptions()
	lo.Namespace = "fx"
	l, err := pglock.NewLock(pool, pglock.Options{}, lo)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	p, _ := pglock.ProviderOf(l)
	e, err := leadership.NewElector("reports", l, electorOpts(), leadership.WithIdentity(identity))
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = e.Stop(context.Background()) })
	return e, p, l
}

// TestPausedLeaderChild is the paused leader's process, run by
// TestInTerm_D3_PausedLeaderLateTransactionRefused as a subprocess of this
// test binary; without childDSN it does nothing. It leads, prints
// "LEADING <fence> <provider key>", then obeys commands on stdin: WRITE
// (a term-checked write), BEGIN (open a transaction and check the term),
// COMMIT (write in it and commit), EXIT. It writes whatever its own clock
// says: it stands for a leader paused right after it checked IsLeader.
func TestPausedLeaderChild(t *testing.T) {
	dsn := os.Getenv(childDSN)
	if dsn == "" {
		t.Skip("run as a subprocess only")
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	e, p, _ := newElector(t, pool, "paused-leader")
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.WaitForLeadership(wctx); err != nil {
		t.Fatal(err)
	}
	fence, key := e.Fence(), leadership.Describe(e).ProviderKey
	fmt.Printf("LEADING %d %s\n", fence, key)
	result := func(what string, err error) {
		switch {
		case err == nil:
			fmt.Println(what, "ok")
		case errors.Is(err, fencing.ErrStale):
			fmt.Println(what, "stale", strings.ReplaceAll(err.Error(), "\n", " "))
		default:
			fmt.Println(what, "error", strings.ReplaceAll(err.Error(), "\n", " "))
		}
	}
	var tx pgx.Tx
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "WRITE":
			result("RESULT", fencingpg.SaveReportInTerm(ctx, pool, p, key, fence, "daily", "by the paused leader"))
		case "BEGIN":
			tx, err = pool.Begin(ctx)
			if err == nil {
				err = p.CheckTerm(ctx, tx, key, fence)
			}
			result("CHECKED", err)
		case "COMMIT":
			_, err := tx.Exec(ctx, "INSERT INTO reports (id, body, fence) VALUES ('daily', 'by the paused leader', $1) ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body", int64(fence))
			if err == nil {
				err = tx.Commit(ctx)
			}
			result("RESULT", err)
		case "EXIT":
			if tx != nil {
				_ = tx.Rollback(ctx) // returns its connection, so the pool can close
			}
			return
		}
	}
}

// child is the paused leader's process.
type child struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startChild(t *testing.T, dsn string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPausedLeaderChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childDSN+"="+dsn)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, in: in, lines: make(chan string, 16)}
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			c.lines <- s.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_, _ = io.WriteString(in, "EXIT\n")
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return c
}

// expect returns the child's next line that starts with prefix.
func (c *child) expect(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("the child exited before printing %s", prefix)
			}
			if strings.HasPrefix(l, prefix+" ") {
				return strings.TrimPrefix(l, prefix+" ")
			}
		case <-timeout:
			t.Fatalf("no %s line from the child within 15s", prefix)
		}
	}
}

func (c *child) send(t *testing.T, cmd string) {
	t.Helper()
	if _, err := io.WriteString(c.in, cmd+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (c *child) signal(t *testing.T, s syscall.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(s); err != nil {
		t.Fatal(err)
	}
}

// waitLeads waits until e leads.
func waitLeads(t *testing.T, e *leadership.Elector) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := e.WaitForLeadership(ctx); err != nil {
		t.Fatalf("the successor did not lead: %v", err)
	}
}

// D3, G5: two electors in two processes; the leader is stopped (SIGSTOP)
// past its lease, its successor takes over and commits; the old leader is
// resumed and its late transaction is refused, whether the pause fell
// before its term check or inside its checked transaction.
func TestInTerm_D3_PausedLeaderLateTransactionRefused(t *testing.T) {
	for _, pauseInside := range []bool{false, true} {
		name := "paused-before-the-check"
		if pauseInside {
			name = "paused-inside-the-checked-transaction"
		}
		t.Run(name, func(t *testing.T) {
			pool := newDB(t)
			ctx := context.Background()
			c := startChild(t, pool.Config().ConnString())
			leading := strings.Fields(c.expect(t, "LEADING"))
			if len(leading) != 2 {
				t.Fatalf("LEADING %q", leading)
			}
			oldFence, err := strconv.ParseUint(leading[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			successor, p, _ := newElector(t, pool, "successor")
			if pauseInside {
				c.send(t, "BEGIN")
				if got := c.expect(t, "CHECKED"); got != "ok" {
					t.Fatalf("the leader's term check: %s", got)
				}
			}
			c.signal(t, syscall.SIGSTOP)
			paused := time.Now()
			waitLeads(t, successor)
			t.Logf("successor leads %v after the pause", time.Since(paused))
			if successor.Fence() <= oldFence {
				t.Fatalf("successor's fence %d is not above the paused leader's %d", successor.Fence(), oldFence)
			}
			key := leadership.Describe(successor).ProviderKey
			if key != leading[1] {
				t.Fatalf("provider keys differ: %q and %q", key, leading[1])
			}
			if err := fencingpg.SaveReportInTerm(ctx, pool, p, key, successor.Fence(), "daily", "by the successor"); err != nil {
				t.Fatalf("the successor's write: %v", err)
			}
			c.signal(t, syscall.SIGCONT)
			if pauseInside {
				c.send(t, "COMMIT")
			} else {
				c.send(t, "WRITE")
			}
			got := c.expect(t, "RESULT")
			if got == "ok" {
				t.Fatal("the paused leader's late transaction committed")
			}
			if !pauseInside && !strings.HasPrefix(got, "stale ") {
				t.Fatalf("the paused leader's late write: %s; want refused as stale", got)
			}
			t.Logf("the paused leader's late transaction: %s", got)
			if body, fence := report(t, pool, "daily"); body != "by the successor" || uint64(fence) != successor.Fence() {
				t.Fatalf("report = %q fence %d, want the successor's (%d)", body, fence, successor.Fence())
			}
		})
	}
}
