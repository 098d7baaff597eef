package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hostloom/hostloom/core/scheduling"
	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestCLI_O1_OutputFormats: -o json is --json, -o yaml carries the same
// document, -o wide adds columns; a format the CLI does not write, or
// --json contradicting -o, is a command-line error naming the value.
func TestCLI_O1_OutputFormats(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	leaderOf(t, startReplica(t, srv, "shop", "billing", "replica-a"))

	byFlag := decode[statusJSON](t, cli(t, "status", "--config", cfg, "--json").out)
	for _, args := range [][]string{{"-o", "json"}, {"--output=json"}, {"--json", "-o", "json"}} {
		r := cli(t, append([]string{"status", "--config", cfg}, args...)...)
		if got := decode[statusJSON](t, r.out); r.code != exitOK || len(got.Roles) != 1 || got.Roles[0].Leader != byFlag.Roles[0].Leader || got.Store.Namespace != "shop" {
			t.Errorf("status %v: exit %d, %+v; --json gave %+v", args, r.code, got, byFlag)
		}
	}

	r := cli(t, "status", "--config", cfg, "-o", "yaml")
	var fromYAML map[string]any
	if err := yaml.Unmarshal([]byte(r.out), &fromYAML); r.code != exitOK || err != nil {
		t.Fatalf("-o yaml: exit %d, %v:\n%s", r.code, err, r.out)
	}
	if strings.Contains(r.out, "{") || !strings.Contains(r.out, "leader: replica-a") {
		t.Errorf("-o yaml is not block YAML with the leader:\n%s", r.out)
	}
	// The same keys and values as the JSON (YAML reads JSON too).
	var fromJSON map[string]any
	if err := yaml.Unmarshal([]byte(cli(t, "status", "--config", cfg, "-o", "json").out), &fromJSON); err != nil {
		t.Fatal(err)
	}
	roleOf := func(m map[string]any) map[string]any {
		roles, _ := m["roles"].([]any)
		if len(roles) != 1 {
			t.Fatalf("roles = %v", m["roles"])
		}
		role, _ := roles[0].(map[string]any)
		delete(role, "ttl_ms") // the lease runs down between the two reads
		delete(role, "participants")
		return role
	}
	if a, b := roleOf(fromYAML), roleOf(fromJSON); !equalJSON(t, a, b) {
		t.Errorf("yaml role %v, json role %v", a, b)
	}

	r = cli(t, "status", "--config", cfg, "-o", "wide")
	if r.code != exitOK || !strings.Contains(r.out, "KEY") || !strings.Contains(r.out, "leader:billing") {
		t.Errorf("-o wide: exit %d, want a KEY column with leader:billing:\n%s", r.code, r.out)
	}
	if r = cli(t, "status", "--config", cfg); strings.Contains(r.out, "leader:billing") {
		t.Errorf("the default table shows the wide columns:\n%s", r.out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--config", cfg, "-o", "xml"}, `--output "xml"`},
		{[]string{"status", "--config", cfg, "--json", "-o", "yaml"}, "--json and --output yaml"},
	} {
		r := cli(t, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.errOut, tc.want) || r.out != "" {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", tc.args, r.code, r.errOut, exitUsage, tc.want)
		}
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

// TestCLI_O1_NamespaceFlag: --namespace overrides the configuration's;
// status and jobs over a namespace with nothing in it exit 0 and say
// which namespace they read and where that came from.
func TestCLI_O1_NamespaceFlag(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "staging") // the file names a namespace with nothing in it
	r := startReplica(t, srv, "shop", "billing", "replica-a")
	leaderOf(t, r)
	startScheduler(t, r)
	waitFor(t, "a run recorded", func() bool {
		st, err := r.lock.JobStatus(t.Context(), scheduling.JobKey("billing", "invoices"))
		return err == nil && st.Runs >= 1
	})

	res := cli(t, "status", "--config", cfg)
	if want := `No roles in namespace "staging" (locking.namespace, file ` + cfg + `)`; res.code != exitOK || !strings.Contains(res.out, want) {
		t.Errorf("status over an empty namespace: exit %d, %q; want exit 0 and %q", res.code, res.out, want)
	}
	res = cli(t, "jobs", "--config", cfg)
	if want := `No jobs recorded in namespace "staging" (locking.namespace, file ` + cfg + `)`; res.code != exitOK || !strings.Contains(res.out, want) {
		t.Errorf("jobs over an empty namespace: exit %d, %q; want exit 0 and %q", res.code, res.out, want)
	}
	if st := decode[statusJSON](t, cli(t, "status", "--config", cfg, "-o", "json").out); st.Store.Namespace != "staging" || len(st.Roles) != 0 {
		t.Errorf("status -o json over an empty namespace = %+v", st)
	}

	st := decode[statusJSON](t, cli(t, "status", "--config", cfg, "--namespace", "shop", "-o", "json").out)
	if st.Store.Namespace != "shop" || len(st.Roles) != 1 || st.Roles[0].Leader != "replica-a" {
		t.Errorf("status --namespace shop = %+v", st)
	}
	if j := decode[jobsOut](t, cli(t, "jobs", "--config", cfg, "--namespace=shop", "-o", "json").out); j.Namespace != "shop" || len(j.Jobs) != 1 {
		t.Errorf("jobs --namespace shop = %+v", j)
	}
	res = cli(t, "status", "--config", cfg, "--namespace", "nowhere")
	if want := `No roles in namespace "nowhere" (--namespace)`; res.code != exitOK || !strings.Contains(res.out, want) {
		t.Errorf("status --namespace nowhere: exit %d, %q; want %q", res.code, res.out, want)
	}
}

// TestCLI_S11_JobsScheduleAndNextRun: jobs shows each job's schedule and
// its next slot after now, in the table and in JSON; -o wide adds the
// newest run's columns.
func TestCLI_S11_JobsScheduleAndNextRun(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	r := startReplica(t, srv, "shop", "billing", "replica-a")
	leaderOf(t, r)
	startScheduler(t, r)
	waitFor(t, "a run recorded", func() bool {
		st, err := r.lock.JobStatus(t.Context(), scheduling.JobKey("billing", "invoices"))
		return err == nil && st.Runs >= 1
	})
	checkScheduleShown(t, cfg, "@every 50ms")
}

// checkScheduleShown checks what jobs says of the scheduler's invoices
// job (Every 50ms, see startScheduler) over the configuration cfg.
func checkScheduleShown(t *testing.T, cfg, want string) {
	t.Helper()
	before := time.Now()
	j := decode[jobsOut](t, cli(t, "jobs", "--config", cfg, "-o", "json").out).Jobs
	if len(j) != 1 || j[0].Schedule != want || j[0].NextRun == nil {
		t.Fatalf("jobs = %+v, want schedule %q and a next run", j, want)
	}
	next := *j[0].NextRun
	if !next.After(before) || next.UnixMilli()%50 != 0 || j[0].LastSlot == nil || !next.After(*j[0].LastSlot) {
		t.Errorf("next_run %v: want a 50ms slot after now (%v) and after the last slot %v", next, before, j[0].LastSlot)
	}
	res := cli(t, "jobs", "--config", cfg)
	head, _, _ := strings.Cut(res.out, "\n")
	if res.code != exitOK || !strings.Contains(head, "SCHEDULE") || !strings.Contains(head, "NEXT RUN") || !strings.Contains(res.out, want) || strings.Contains(head, "ATTEMPT") {
		t.Errorf("jobs table: exit %d, want SCHEDULE and NEXT RUN columns with %q:\n%s", res.code, want, res.out)
	}
	res = cli(t, "jobs", "--config", cfg, "-o", "wide")
	if head, _, _ := strings.Cut(res.out, "\n"); res.code != exitOK || !strings.Contains(head, "ATTEMPT") || !strings.Contains(head, "DURATION") {
		t.Errorf("jobs -o wide: exit %d:\n%s", res.code, res.out)
	}
}

// TestCLI_O1_Version: version names the build's module version and the Go
// version, reading no configuration.
func TestCLI_O1_Version(t *testing.T) {
	r := cliWith(t, stdio{environ: []string{"HOSTLOOM_CONFIG=/nonexistent/app.yaml"}}, "version")
	if r.code != exitOK || !strings.HasPrefix(r.out, "hostloom ") || !strings.Contains(r.out, runtime.Version()) || strings.Count(r.out, "\n") != 1 {
		t.Errorf("version: exit %d, %q; want one line with %s", r.code, r.out, runtime.Version())
	}
	v := decode[versionJSON](t, cli(t, "version", "-o", "json").out)
	if v.Version == "" || v.Go != runtime.Version() || v.Module == "" {
		t.Errorf("version -o json = %+v", v)
	}
	if r := cli(t, "version", "extra"); r.code != exitUsage {
		t.Errorf("version extra: exit %d, want %d", r.code, exitUsage)
	}
}

// TestCLI_O1_Completion: cobra's completion scripts for the four shells,
// and the values of -o offered to them.
func TestCLI_O1_Completion(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash":       "__start_hostloom",
		"zsh":        "#compdef hostloom",
		"fish":       "complete -c hostloom",
		"powershell": "Register-ArgumentCompleter",
	} {
		r := cli(t, "completion", shell)
		if r.code != exitOK || !strings.Contains(r.out, marker) {
			t.Errorf("completion %s: exit %d, script without %q", shell, r.code, marker)
		}
	}
	// The shells ask the binary for -o's values.
	r := cli(t, "__complete", "status", "-o", "")
	for _, f := range outputFormats {
		if !strings.Contains(r.out, f+"\n") {
			t.Errorf("completion of -o lacks %q:\n%s", f, r.out)
		}
	}
}
