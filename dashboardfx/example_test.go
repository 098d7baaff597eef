package dashboardfx_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"

	"go.uber.org/fx"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/configfx"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/dashboard"
	"github.com/hostloom/hostloom/dashboardfx"
	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
)

// The dashboard of an fx app with one role; the app mounts the handler on
// its own server (here a test server).
func Example() {
	var d *dashboard.Dashboard
	var billing leadership.Leadership
	app := fx.New(
		fx.NopLogger,
		configfx.Module("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory"})),
		lockingfx.Module,
		leadershipfx.Role("billing", leadershipfx.WithElectorOptions(leadership.WithIdentity("replica-1"))),
		dashboardfx.Module,
		fx.Supply(dashboardfx.Settings{Title: "Billing"}),
		fx.Populate(&d, fx.Annotate(&billing, fx.ParamTags(`name:"billing"`))),
		leadershipfx.Module,
	)
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer app.Stop(ctx)
	_ = billing.WaitForLeadership(ctx)

	srv := httptest.NewServer(d)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/roles")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(page), `data-leader="replica-1"`), d.ReadOnly())
	// Output: 200 true true
}
