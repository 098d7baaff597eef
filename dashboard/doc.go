// Package dashboard serves the operators' pages of a HostLoom service: an
// http.Handler an app mounts, server-rendered with html/template, its
// templates and stylesheet embedded, no build step and no script beyond a
// few lines that refresh the open page in place.
//
// # Pages
//
// Roles: for every role, the leader's identity, its fence and the
// lease's time left, the participants, the recent transitions (with their
// reasons for this process's own electors; changes of holder the
// dashboard's reads observed, whose reasons only the replicas involved
// know) and how long the role was seen without a leader lately.
//
// Jobs: for every job, its schedule and zone, its policies (overlap,
// catch-up, recover, timeout) and next slots when its scheduler runs in
// this process, the run under way (since, instance, fence), the newest
// runs of every replica with lateness, duration, outcome, instance and
// fence, and whether it is paused, with who, when and the note when the
// pause was made on this dashboard.
//
// Audit log: every action taken or refused, newest first.
//
// # Actions
//
// Pause and resume a job with a note, ask a role's leader to resign, and
// have it hand the role over to a participant the operator names.
// The dashboard is read-only unless Options.Credential is set; an
// operator signs in with their name and the credential (compared in
// constant time, never shown or logged) and gets a session cookie
// (HttpOnly, SameSite=Strict). Every action's form carries the session's
// token and the post must not come from another site (Sec-Fetch-Site and
// Origin are checked first). A resign or hand-over form names the term it
// was made for (fence and leader): a page that shows an ended term acts on
// nothing. A hand-over must name another participant of the role.
// Every action, done or refused, is recorded with who, what and when, in
// memory (the audit page) and in the log as DashboardAction.
//
// Handing over travels through the lock as a resign request naming the
// successor (locking.DistributedLock.RequestHandOver): over a lock without
// it, or without resign requests, the page says it is not available.
//
// # Cost
//
// An open roles page reads every role once per refresh (one Inspect round
// trip each); an open jobs page reads every job twice (status and
// history). Options.Refresh sets the pace (default 2s). Pages open at the
// same time share one read per half refresh interval, so more operators
// do not cost more; nothing is read while no page is open.
//
// # Mounting
//
//	mux.Handle("/dashboard/", http.StripPrefix("/dashboard", d))
//
// dashboardfx provides it in an fx app; `hostloom dashboard` serves it
// over the service's configuration, outside the service.
package dashboard
