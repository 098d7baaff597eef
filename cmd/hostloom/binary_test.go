package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestCLI_O1_Binary builds the hostloom binary and runs it as an operator
// would: the exit codes reach the shell, and nothing but the CLI's own
// line reaches stderr when Redis is unreachable (go-redis's log is off).
func TestCLI_O1_Binary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	bin := filepath.Join(t.TempDir(), "hostloom")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	refused := writeConfig(t, "127.0.0.1:1", "shop")
	startReplica(t, srv, "shop", "billing", "replica-a")
	leaderOf(t, startReplica(t, srv, "shop", "billing", "replica-b"), startReplica(t, srv, "shop", "reports", "replica-c"))

	exe := func(args ...string) result {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"} // no HOSTLOOM_* from the test's environment
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("$ hostloom %s → exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		return result{code: code, out: out.String(), errOut: errOut.String()}
	}

	if r := exe("status", "-config", cfg); r.code != exitOK || !strings.Contains(r.out, "replica-c") || !strings.Contains(r.out, "billing") {
		t.Errorf("status: exit %d", r.code)
	}
	if r := exe("status", "-json", "-config", cfg); r.code != exitOK || len(decode[statusJSON](t, r.out).Roles) != 2 {
		t.Errorf("status -json: exit %d", r.code)
	}
	if r := exe("bogus"); r.code != exitUsage || !strings.Contains(r.errOut, "Usage:") || r.out != "" {
		t.Errorf("bogus: exit %d", r.code)
	}
	if r := exe("--help"); r.code != exitOK || !strings.Contains(r.out, "resign") {
		t.Errorf("--help: exit %d", r.code)
	}
	// A built binary knows its module version (a pseudo-version from the
	// checkout, or "(devel)") and the Go that built it.
	if r := exe("version", "-o", "json"); r.code != exitOK || decode[versionJSON](t, r.out).Version == "(unknown)" || !strings.HasPrefix(decode[versionJSON](t, r.out).Go, "go1.") {
		t.Errorf("version: exit %d", r.code)
	}
	start := time.Now()
	r := exe("status", "--config", refused)
	lines := strings.Split(strings.TrimSuffix(r.errOut, "\n"), "\n")
	if r.code != exitError || len(lines) != 1 || !slices.Equal(lines, []string{"hostloom: redis 127.0.0.1:1 unreachable: connection refused"}) {
		t.Errorf("unreachable: exit %d, stderr lines %q", r.code, lines)
	}
	t.Logf("unreachable Redis reported after %v (dial_timeout 2s bounds it)", time.Since(start).Round(time.Millisecond))
}
