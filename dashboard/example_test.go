package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/dashboard"
)

// A dashboard over one elector, mounted under /dashboard/.
func ExampleNew() {
	lock, _ := memlock.NewLock(locking.DefaultOptions())
	defer lock.Close()
	e, _ := leadership.NewElector("billing", lock, leadership.DefaultOptions(), leadership.WithIdentity("replica-1"))
	ctx := context.Background()
	_ = e.Start(ctx)
	defer e.Stop(ctx)
	_ = e.WaitForLeadership(ctx)

	d, err := dashboard.New(dashboard.Options{Lock: lock, Electors: []*leadership.Elector{e}})
	if err != nil {
		panic(err)
	}
	defer d.Close()
	mux := http.NewServeMux()
	mux.Handle("/dashboard/", http.StripPrefix("/dashboard", d))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/dashboard/fragment/roles")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(body), `data-leader="replica-1"`), d.ReadOnly())
	// Output: 200 true true
}
