package fencingpg_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hostloom/hostloom/core/fencing"
	fencingpg "github.com/hostloom/hostloom/examples/fencing-postgres"
)

func wantStale(t *testing.T, err error, resource string, fence, highest uint64) {
	t.Helper()
	var se *fencing.StaleError
	if !errors.Is(err, fencing.ErrStale) || !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *fencing.StaleError", err)
	}
	want := fencing.StaleError{Resource: resource, Fence: fence, Highest: highest}
	if *se != want {
		t.Fatalf("StaleError = %+v, want %+v", *se, want)
	}
}

func report(t *testing.T, db *pgxpool.Pool, id string) (body string, fence int64) {
	t.Helper()
	err := db.QueryRow(context.Background(), "SELECT body, fence FROM reports WHERE id = $1", id).Scan(&body, &fence)
	if err != nil {
		t.Fatalf("read report %q: %v", id, err)
	}
	return body, fence
}

// The failure fencing prevents: the leader (fence 5) is paused past its
// lease while about to write; its successor (fence 6) writes; the old leader
// resumes and writes. A plain UPDATE lets the late write overwrite the
// successor's; the fenced UPDATE matches no row, the write is refused with
// ErrStale and the successor's row is kept.
func TestUpdateReport_G5_PausedLeaderLateWriteRefused(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()

	// Without the fence condition, the late write wins.
	if _, err := db.Exec(ctx, `INSERT INTO reports (id, body, fence) VALUES ('plain', 'by successor (6)', 6)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE reports SET body = 'by paused leader (5)' WHERE id = 'plain'`); err != nil {
		t.Fatal(err)
	}
	if body, _ := report(t, db, "plain"); body != "by paused leader (5)" {
		t.Fatalf("plain UPDATE: %q", body)
	}

	// With it.
	if err := fencingpg.SaveReport(ctx, db, "daily", 5, "by leader (5)"); err != nil {
		t.Fatalf("leader's write before the pause: %v", err)
	}
	if err := fencingpg.UpdateReport(ctx, db, "daily", 6, "by successor (6)"); err != nil {
		t.Fatalf("successor's write: %v", err)
	}
	err := fencingpg.UpdateReport(ctx, db, "daily", 5, "by paused leader (5)")
	wantStale(t, err, "daily", 5, 6)
	if body, fence := report(t, db, "daily"); body != "by successor (6)" || fence != 6 {
		t.Fatalf("row = %q fence %d, want the successor's (6)", body, fence)
	}
	// The upsert form refuses it too.
	wantStale(t, fencingpg.SaveReport(ctx, db, "daily", 5, "by paused leader (5)"), "daily", 5, 6)
	if body, _ := report(t, db, "daily"); body != "by successor (6)" {
		t.Fatalf("row = %q after a stale upsert", body)
	}
}

func TestSaveReport_G5_FencesOrderWrites(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	steps := []struct {
		fence uint64
		body  string
		stale bool
		want  int64 // row fence afterwards
	}{
		{3, "a", false, 3}, // insert
		{3, "b", false, 3}, // the same term writes again
		{2, "c", true, 3},
		{9, "d", false, 9},
		{math.MaxInt64, "e", false, math.MaxInt64},
		{8, "f", true, math.MaxInt64},
	}
	lastBody := ""
	for i, s := range steps {
		err := fencingpg.SaveReport(ctx, db, "r", s.fence, s.body)
		if s.stale {
			wantStale(t, err, "r", s.fence, uint64(s.want))
		} else if err != nil {
			t.Fatalf("step %d: %v", i, err)
		} else {
			lastBody = s.body
		}
		if body, fence := report(t, db, "r"); body != lastBody || fence != s.want {
			t.Fatalf("step %d: row %q fence %d, want %q fence %d", i, body, fence, lastBody, s.want)
		}
	}
}

func TestUpdateReport_G5_MissingRow(t *testing.T) {
	db := newDB(t)
	err := fencingpg.UpdateReport(context.Background(), db, "nope", 1, "x")
	if !errors.Is(err, fencingpg.ErrNotFound) || errors.Is(err, fencing.ErrStale) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("err = %v, want ErrNotFound naming the id", err)
	}
}

// Fence 0 ("no fence") and fences beyond bigint are refused with an error
// naming them, before anything is sent; nothing is written.
func TestFences_G5_InvalidFencesRefused(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	called := false
	fn := func(pgx.Tx) error { called = true; return nil }
	for name, op := range map[string]func(uint64) error{
		"update": func(f uint64) error { return fencingpg.UpdateReport(ctx, db, "r", f, "x") },
		"save":   func(f uint64) error { return fencingpg.SaveReport(ctx, db, "r", f, "x") },
		"admit":  func(f uint64) error { return fencingpg.WithFence(ctx, db, "r", f, fn) },
	} {
		err := op(0)
		if !errors.Is(err, fencing.ErrZeroFence) || !strings.Contains(err.Error(), `"r"`) {
			t.Fatalf("%s fence 0: err = %v, want ErrZeroFence naming the resource", name, err)
		}
		err = op(math.MaxInt64 + 1)
		if err == nil || !strings.Contains(err.Error(), "9223372036854775808") {
			t.Fatalf("%s fence 2^63: err = %v, want an error naming the fence", name, err)
		}
	}
	if called {
		t.Fatal("WithFence ran fn for an invalid fence")
	}
	var n int
	if err := db.QueryRow(ctx, "SELECT (SELECT count(*) FROM reports) + (SELECT count(*) FROM fences)").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows written by invalid fences (%v)", n, err)
	}
}

// WithFence: a transaction of a stale term never runs; a failed one leaves
// neither its writes nor its admission behind.
func TestWithFence_G5_StaleTransactionNeverRuns(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	addLine := func(fence uint64, line string) error {
		return fencingpg.WithFence(ctx, db, "daily", fence, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO report_lines (report, line, fence) VALUES ('daily', $1, $2)", line, int64(fence))
			return err
		})
	}
	if err := addLine(5, "leader 5"); err != nil {
		t.Fatal(err)
	}
	if err := addLine(6, "successor 6"); err != nil {
		t.Fatal(err)
	}
	ran := false
	err := fencingpg.WithFence(ctx, db, "daily", 5, func(pgx.Tx) error { ran = true; return nil })
	wantStale(t, err, "daily", 5, 6)
	if ran {
		t.Fatal("the stale term's transaction ran")
	}

	// A failing transaction of a newer term rolls back its admission.
	boom := errors.New("boom")
	err = fencingpg.WithFence(ctx, db, "daily", 7, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO report_lines (report, line, fence) VALUES ('daily', 'rolled back', 7)"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want fn's error", err)
	}
	var gate int64
	if err := db.QueryRow(ctx, "SELECT fence FROM fences WHERE resource = 'daily'").Scan(&gate); err != nil || gate != 6 {
		t.Fatalf("gate fence %d (%v), want 6 after the rollback", gate, err)
	}
	if err := addLine(6, "successor 6 again"); err != nil {
		t.Fatalf("the live term after a rolled-back newer attempt: %v", err)
	}
	rows, err := db.Query(ctx, "SELECT line FROM report_lines ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(lines, "|"), "leader 5|successor 6|successor 6 again"; got != want {
		t.Fatalf("lines %q, want %q", got, want)
	}
}

// Concurrent writers with random fences through one resource: in the order
// the database applied them (the identity column, assigned under the gate
// row's lock), fences never go back down, and every refusal names a higher
// admitted fence. The same for the single-statement upsert: the row ends
// with the highest fence.
func TestWithFence_G5_ConcurrentWritersNeverInterleave(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	const writers, writes = 6, 25
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		maxFence uint64
		admitted int
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 2))
			for range writes {
				f := 1 + r.Uint64N(60)
				err := fencingpg.WithFence(ctx, db, "race", f, func(tx pgx.Tx) error {
					_, err := tx.Exec(ctx, "INSERT INTO report_lines (report, line, fence) VALUES ('race', '', $1)", int64(f))
					return err
				})
				var se *fencing.StaleError
				switch {
				case err == nil:
					mu.Lock()
					admitted++
					mu.Unlock()
				case errors.As(err, &se):
					if se.Highest <= f {
						t.Errorf("fence %d refused with highest %d", f, se.Highest)
					}
				default:
					t.Error(err)
				}
				if err := fencingpg.SaveReport(ctx, db, "race", f, "x"); err != nil && !errors.Is(err, fencing.ErrStale) {
					t.Error(err)
				}
				mu.Lock()
				maxFence = max(maxFence, f)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	rows, err := db.Query(ctx, "SELECT fence FROM report_lines WHERE report = 'race' ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	fences, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if len(fences) != admitted {
		t.Fatalf("%d lines, %d admitted transactions", len(fences), admitted)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] < fences[i-1] {
			t.Fatalf("line %d: fence %d after %d", i, fences[i], fences[i-1])
		}
	}
	if last := fences[len(fences)-1]; uint64(last) != maxFence {
		t.Fatalf("last admitted fence %d, want %d", last, maxFence)
	}
	if _, fence := report(t, db, "race"); uint64(fence) != maxFence {
		t.Fatalf("row fence %d, want %d", fence, maxFence)
	}
}
