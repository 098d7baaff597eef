// Package dashboardfx provides the operators' dashboard (package
// dashboard) in an fx app, over the lock of lockingfx, the electors of
// leadershipfx.Role and the schedulers of schedulingfx.Module. It only
// wires: the app mounts the handler on its own HTTP server.
//
//	fx.New(
//		configfx.Module("app.yaml"),
//		lockingfx.Module,
//		leadershipfx.Role("billing"),
//		dashboardfx.Module,
//		fx.Supply(dashboardfx.Settings{Credential: os.Getenv("DASHBOARD_TOKEN")}),
//		fx.Invoke(func(mux *http.ServeMux, d *dashboard.Dashboard) {
//			mux.Handle("/dashboard/", http.StripPrefix("/dashboard", d))
//		}),
//	)
package dashboardfx
