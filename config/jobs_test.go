package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/schedulingfx"
)

func TestSchedulingJobs_DecodeFromFileAndEnv(t *testing.T) {
	path := writeFile(t, "locking:\n  provider: memory\nscheduling:\n  jobs:\n    invoices:\n      catch_up: all\n      overlap: buffer_one\n")
	c, err := config.Load(path, config.WithEnviron([]string{"HOSTLOOM_SCHEDULING__JOBS__INVOICES__PAUSED=true", "HOSTLOOM_SCHEDULING__JOBS__REPORTS__OVERLAP=cancel_previous"}))
	if err != nil {
		t.Fatal(err)
	}
	inv, ok := c.Scheduling.Job("invoices")
	if !ok || inv.CatchUp == nil || *inv.CatchUp != scheduling.CatchUpAll || inv.Overlap == nil || *inv.Overlap != scheduling.OverlapBufferOne ||
		inv.Paused == nil || !*inv.Paused {
		t.Fatalf("invoices = %+v", inv)
	}
	rep, ok := c.Scheduling.Job("reports")
	if !ok || rep.Overlap == nil || *rep.Overlap != scheduling.OverlapCancelPrevious || rep.CatchUp != nil || rep.Paused != nil {
		t.Fatalf("reports = %+v", rep)
	}
	j := schedulingfx.ApplyOverrides(c.Scheduling, scheduling.Job{Name: "invoices", CatchUp: scheduling.CatchUpNone, Recover: true})
	if j.CatchUp != scheduling.CatchUpAll || j.Overlap != scheduling.OverlapBufferOne || !j.Recover {
		t.Fatalf("Apply = %+v", j)
	}
	if got := c.Scheduling.Source("scheduling.jobs.invoices.paused"); got != "env HOSTLOOM_SCHEDULING__JOBS__INVOICES__PAUSED" {
		t.Errorf("Source = %q", got)
	}
}

func TestSchedulingJobs_BadValueNamesKeyAndSource(t *testing.T) {
	path := writeFile(t, "locking:\n  provider: memory\nscheduling:\n  jobs:\n    invoices:\n      catch_up: sometimes\n")
	_, err := config.Load(path, config.WithEnviron([]string{"HOSTLOOM_SCHEDULING__JOBS__INVOICES__OVERLAP=queue"}))
	if err == nil {
		t.Fatal("Load succeeded")
	}
	var fe *config.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("not a FieldError: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"scheduling.jobs.invoices.catch_up", "sometimes", "file " + path,
		"scheduling.jobs.invoices.overlap", "queue", "env HOSTLOOM_SCHEDULING__JOBS__INVOICES__OVERLAP"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
}

func TestSchedulingJobs_CheckJobsNamesUnknownJob(t *testing.T) {
	c, err := config.Load("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory", "HOSTLOOM_SCHEDULING__JOBS__INVOICE__PAUSED=true"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Scheduling.CheckJobs("invoice"); err != nil {
		t.Fatalf("declared job refused: %v", err)
	}
	err = c.Scheduling.CheckJobs("invoices", "reports")
	want := `scheduling.jobs.invoice`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"invoices", "reports"`) ||
		!strings.Contains(err.Error(), "env HOSTLOOM_SCHEDULING__JOBS__INVOICE__PAUSED") {
		t.Fatalf("CheckJobs error %v", err)
	}
}
