package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// startScheduler runs a scheduler with job "invoices" every 50ms on the
// replica's elector, with the lock as its job store.
func startScheduler(t *testing.T, r *replica) *scheduling.Scheduler {
	t.Helper()
	s, err := scheduling.New(r.elector, scheduling.WithSlotStore(r.lock))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Add(scheduling.Job{Name: "invoices", Schedule: scheduling.Every(50 * time.Millisecond), Run: func(context.Context) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stop scheduler: %v", err)
		}
	})
	return s
}

// runningInvoices waits until r leads, starts its scheduler and waits
// until job "invoices" of role "billing" has recorded three runs.
func runningInvoices(t *testing.T, r *replica) *scheduling.Scheduler {
	t.Helper()
	leaderOf(t, r)
	s := startScheduler(t, r)
	waitFor(t, "three runs recorded", func() bool {
		st, err := r.lock.JobStatus(t.Context(), scheduling.JobKey("billing", "invoices"))
		return err == nil && st.Runs >= 3
	})
	return s
}

// checkJobsCLI runs jobs, history, pause and resume against the job
// store behind cfg, while replica r leads and runs job "invoices" of
// role "billing": the checks the etcd and PostgreSQL backends share.
func checkJobsCLI(t *testing.T, r *replica, cfg string) {
	t.Helper()
	s := runningInvoices(t, r)
	res := cli(t, "jobs", "--config", cfg, "--json")
	if res.code != exitOK {
		t.Fatalf("exit %d: %s", res.code, res.errOut)
	}
	jobs := decode[jobsOut](t, res.out)
	if len(jobs.Jobs) != 1 {
		t.Fatalf("jobs = %+v", jobs)
	}
	if j := jobs.Jobs[0]; j.Role != "billing" || j.Job != "invoices" || j.Paused || j.Runs < 3 || j.LastRun == nil || j.LastRun.Identity != "replica-a" {
		t.Errorf("job = %+v", j)
	}
	if res := cli(t, "jobs", "billing", "--config", cfg); res.code != exitOK || !strings.Contains(res.out, "invoices") {
		t.Errorf("table: exit %d\n%s", res.code, res.out)
	}
	h := decode[historyOut](t, cli(t, "history", "billing", "invoices", "-n", "2", "--config", cfg, "--json").out)
	if len(h.Runs) != 2 || !h.Runs[0].Slot.After(h.Runs[1].Slot) || h.Runs[0].Identity != "replica-a" {
		t.Errorf("history = %+v", h.Runs)
	}
	if res := cli(t, "pause", "billing", "invoices", "--config", cfg); res.code != exitOK {
		t.Fatalf("pause: exit %d, %q", res.code, res.errOut)
	}
	waitFor(t, "the scheduler sees the pause", func() bool { return s.Jobs()[0].Paused })
	if res := cli(t, "resume", "billing", "invoices", "--config", cfg); res.code != exitOK {
		t.Fatalf("resume: exit %d, %q", res.code, res.errOut)
	}
	waitFor(t, "the scheduler sees the resume", func() bool { return !s.Jobs()[0].Paused })
}

type jobsOut struct {
	Namespace string    `json:"namespace"`
	Jobs      []jobJSON `json:"jobs"`
}

type historyOut struct {
	Role string    `json:"role"`
	Job  string    `json:"job"`
	Runs []runJSON `json:"runs"`
}

// TestCLI_S11_JobsHistoryPauseResume: jobs lists the scheduler's job with
// its runs; history shows them newest first with identity, fence and
// attempt; pause and resume reach the running scheduler through the store
// (S10); an unknown job is an error naming it.
func TestCLI_S11_JobsHistoryPauseResume(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	r := startReplica(t, srv, "shop", "billing", "replica-a")
	s := runningInvoices(t, r)

	res := cli(t, "jobs", "--config", cfg, "--json")
	if res.code != exitOK {
		t.Fatalf("exit %d", res.code)
	}
	jobs := decode[jobsOut](t, res.out)
	if len(jobs.Jobs) != 1 {
		t.Fatalf("jobs = %+v", jobs)
	}
	j := jobs.Jobs[0]
	if j.Role != "billing" || j.Job != "invoices" || j.Paused || j.Runs < 3 || j.LastSlot == nil || j.LastRun == nil || j.LastRun.Identity != "replica-a" {
		t.Errorf("job = %+v", j)
	}
	if res := cli(t, "jobs", "billing", "--config", cfg); res.code != exitOK || !strings.Contains(res.out, "invoices") || !strings.Contains(res.out, "active") {
		t.Errorf("table: exit %d\n%s", res.code, res.out)
	}

	res = cli(t, "history", "billing", "invoices", "-n", "2", "--config", cfg, "--json")
	if res.code != exitOK {
		t.Fatalf("exit %d", res.code)
	}
	h := decode[historyOut](t, res.out)
	if len(h.Runs) != 2 || !h.Runs[0].Slot.After(h.Runs[1].Slot) {
		t.Fatalf("history = %+v, want 2 runs newest first", h.Runs)
	}
	for _, run := range h.Runs {
		if run.Identity != "replica-a" || run.Attempt != 1 {
			t.Errorf("run = %+v, want replica-a, attempt 1", run)
		}
		// The fence is shown as the scheduler records it (G2); a
		// scheduler that records none yet leaves it out.
		switch run.Fence {
		case r.elector.Fence():
		case 0:
			t.Logf("the scheduler recorded no fence for slot %v", run.Slot)
		default:
			t.Errorf("run fence %d, elector's %d", run.Fence, r.elector.Fence())
		}
	}
	if res := cli(t, "history", "billing", "invoices", "--config", cfg); res.code != exitOK || !strings.Contains(res.out, "SLOT") || !strings.Contains(res.out, "replica-a") {
		t.Errorf("table: exit %d\n%s", res.code, res.out)
	}

	paused := func() bool { return s.Jobs()[0].Paused }
	if res := cli(t, "pause", "billing", "invoices", "--config", cfg); res.code != exitOK || res.out != "Paused job invoices of role billing.\n" {
		t.Fatalf("pause: exit %d, %q", res.code, res.out)
	}
	waitFor(t, "the scheduler sees the pause", paused)
	if j := decode[jobsOut](t, cli(t, "jobs", "--config", cfg, "--json").out).Jobs[0]; !j.Paused {
		t.Errorf("jobs after pause = %+v", j)
	}
	if res := cli(t, "resume", "billing", "invoices", "--config", cfg, "--json"); res.code != exitOK || decode[map[string]any](t, res.out)["paused"] != false {
		t.Fatalf("resume: exit %d, %q", res.code, res.out)
	}
	waitFor(t, "the scheduler sees the resume", func() bool { return !paused() })

	for _, args := range [][]string{{"history", "billing", "nope"}, {"pause", "billing", "nope"}, {"resume", "billing", "nope"}} {
		res := cli(t, append(args, "--config", cfg)...)
		if res.code != exitError || !strings.Contains(res.errOut, `no such job "nope" of role "billing" in namespace "shop"`) {
			t.Errorf("%v: exit %d, %q", args, res.code, res.errOut)
		}
	}
	if res := cli(t, "history", "billing", "invoices", "-n", "101", "--config", cfg); res.code != exitUsage || !strings.Contains(res.errOut, "--limit 101 must be in 1..100") {
		t.Errorf("--limit 101: exit %d, %q", res.code, res.errOut)
	}
}
