package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hostloom/hostloom/core/testing/redistest"
)

// TestCLI_W1_DashboardServesTheNamespace runs hostloom dashboard over a
// real redis-server: the roles page lists the namespace's roles with their
// leader and says what a dashboard outside the service cannot know; an
// operator signed in with the credential from the environment asks the
// leader to resign and the other replica takes the role; the command
// stops, exit 0, when its context ends, while a connection with no
// request on it is still open.
func TestCLI_W1_DashboardServesTheNamespace(t *testing.T) {
	srv := redistest.Start(t)
	cfg := writeConfig(t, srv.Addr(), "shop")
	a := startReplica(t, srv, "shop", "billing", "replica-a")
	b := startReplica(t, srv, "shop", "billing", "replica-b")
	lead := leaderOf(t, a, b)
	other := a
	if lead == a {
		other = b
	}
	waitFor(t, "both billing replicas registered", func() bool {
		ps, err := a.elector.Participants(t.Context())
		return err == nil && len(ps) == 2
	})

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"dashboard", "--config", cfg, "--listen", "127.0.0.1:0"},
			stdio{in: strings.NewReader(""), out: out, err: errOut, environ: []string{dashboardCredentialEnv + "=cli-secret"}})
	}()
	addrRE := regexp.MustCompile(`at (http://[^/]+/) \(operators sign in`)
	var base string
	waitFor(t, "the dashboard listening", func() bool {
		m := addrRE.FindStringSubmatch(out.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	get := func(path string) string {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, body)
		}
		return string(body)
	}
	page := get("roles")
	for _, want := range []string{`data-leader="` + lead.identity + `"`, "runs outside the service", "HostLoom · shop"} {
		if !strings.Contains(page, want) {
			t.Errorf("roles page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "cli-secret") {
		t.Error("the page shows the credential")
	}

	resp, err := client.PostForm(base+"login", url.Values{"operator": {"cli-test"}, "credential": {"cli-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	page = get("roles")
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if csrf == nil {
		t.Fatalf("no form token after sign-in:\n%s", page)
	}
	resp, err = client.PostForm(base+"action/resign", url.Values{"csrf": {csrf[1]}, "role": {"billing"},
		"fence": {strconv.FormatUint(lead.elector.Fence(), 10)}, "leader": {lead.identity}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Asked "+lead.identity+" to step down") {
		t.Fatalf("resign: %d\n%s", resp.StatusCode, body)
	}
	waitFor(t, other.identity+" leading billing", other.elector.IsLeader)

	// A connection opened ahead of use, with no request on it, as browsers
	// and Go's own HTTP client open them, does not hold the stop up.
	idle, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(base, "/"), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()

	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut.String())
	}
	if log := errOut.String(); !strings.Contains(log, "DashboardAction") || !strings.Contains(log, "cli-test") || strings.Contains(log, "cli-secret") {
		t.Errorf("audit log on stderr:\n%s", log)
	}
}
