package dashboard

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"go.uber.org/zap"
)

// sessionCookie names the cookie of a signed-in operator.
const sessionCookie = "hostloom_dashboard"

// session is one signed-in operator: the name they gave and the token
// every form of theirs carries (against forgery).
type session struct {
	id      string
	name    string
	csrf    string
	expires time.Time
}

// session returns r's live session, or nil.
func (d *Dashboard) session(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.sessions[c.Value]
	if s == nil {
		return nil
	}
	if !d.now().Before(s.expires) {
		delete(d.sessions, s.id)
		return nil
	}
	return s
}

// guard refuses a post that a browser marks as coming from another site
// (Sec-Fetch-Site) or whose Origin is not this host, before anything
// else is read: a forged cross-site form never reaches an action. Clients
// that send neither header (curl, scripts) pass on to the token checks.
func (d *Dashboard) guard(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if why := crossSite(r); why != "" {
			d.record(r, AuditEntry{Action: strings.TrimPrefix(r.URL.Path, "/"), Outcome: "refused", Detail: "cross-site request: " + why})
			d.answer(w, r, http.StatusForbidden, "roles", "Refused: this request came from another site ("+why+"). Nothing was changed.")
			return
		}
		next(w, r)
	}
}

// crossSite says why r comes from another origin, or "" when it does not
// (or the client does not say).
func crossSite(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return "Sec-Fetch-Site " + site
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	u, err := url.Parse(origin)
	if origin == "null" || err != nil || u.Host == "" {
		return "Origin " + origin
	}
	if !strings.EqualFold(u.Host, r.Host) {
		return "Origin " + origin + " is not " + r.Host
	}
	return ""
}

// credentialOK compares the given secret with the configured one in
// constant time (both hashed first, so the length does not show).
func (d *Dashboard) credentialOK(given string) bool {
	if d.o.Credential == "" {
		return false
	}
	h := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(h[:], d.credHash[:]) == 1
}

// validName checks an operator name: 1..MaxOperatorName bytes, printable.
func validName(s string) bool {
	if s == "" || len(s) > MaxOperatorName {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	pd := d.base(r, "login")
	d.render(w, r, http.StatusOK, "layout", pd)
}

// login checks the credential and starts a session named after the
// operator.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	if d.ReadOnly() {
		d.answer(w, r, http.StatusForbidden, "roles", "This dashboard is read-only: no operator credential is configured.")
		return
	}
	name := strings.TrimSpace(r.PostFormValue("operator"))
	if !validName(name) {
		d.answer(w, r, http.StatusBadRequest, "login", "Give your name (1 to 64 printable characters): it is recorded with every action you take.")
		return
	}
	if !d.credentialOK(r.PostFormValue("credential")) {
		d.record(r, AuditEntry{Who: name, Action: "sign-in", Outcome: "refused", Detail: "wrong credential"})
		d.answer(w, r, http.StatusForbidden, "login", "Wrong credential.")
		return
	}
	s := &session{id: randomHex(32), name: name, csrf: randomHex(32), expires: d.now().Add(SessionLifetime)}
	d.mu.Lock()
	if len(d.sessions) >= maxSessions {
		var oldest *session
		for _, o := range d.sessions {
			if oldest == nil || o.expires.Before(oldest.expires) {
				oldest = o
			}
		}
		delete(d.sessions, oldest.id)
	}
	d.sessions[s.id] = s
	d.mu.Unlock()
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: s.id, Path: cookiePath(r), HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(SessionLifetime / time.Second),
	})
	d.record(r, AuditEntry{Who: name, Action: "sign-in", Outcome: "done"})
	redirect(w, r, "roles")
}

func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	s := d.session(r)
	if s == nil || !tokenOK(r.PostFormValue("csrf"), s.csrf) {
		d.answer(w, r, http.StatusForbidden, "roles", "Not signed in, or the form is not from this dashboard.")
		return
	}
	d.mu.Lock()
	delete(d.sessions, s.id)
	d.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: cookiePath(r), MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	redirect(w, r, "roles")
}

// root is the path the dashboard is mounted at, as the browser sees it,
// ending in a slash: the request's path before StripPrefix less the path
// the dashboard was given. Pages set it as their base, so relative links
// work from any page (action answers live one level down), and the
// session cookie is sent to the dashboard only.
func root(r *http.Request) string {
	full := r.URL.Path
	if r.RequestURI != "" {
		if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
			full = u.Path
		}
	}
	prefix := strings.TrimSuffix(full, r.URL.Path)
	if prefix == full && r.URL.Path != full {
		prefix = "" // not a prefix: the handler was given another path
	}
	return strings.TrimSuffix(prefix, "/") + "/"
}

// cookiePath is where the session cookie is sent: the dashboard's root.
func cookiePath(r *http.Request) string { return root(r) }

// redirect sends the browser to page, relative to the dashboard's root.
func redirect(w http.ResponseWriter, r *http.Request, page string) {
	http.Redirect(w, r, root(r)+page, http.StatusSeeOther)
}

// tokenOK compares a form's token with the session's in constant time.
func tokenOK(given, want string) bool {
	return given != "" && subtle.ConstantTimeCompare([]byte(given), []byte(want)) == 1
}

// AuditEntry is one action taken (or refused) on the dashboard.
type AuditEntry struct {
	// At is when it was asked.
	At time.Time
	// Who is the signed-in operator's name; "" when not signed in.
	Who string
	// Remote is the client's address as the server saw it.
	Remote string
	// Action is what was asked: pause, resume, resign, handover, sign-in.
	Action string
	// Role, Job and Target (a handover's successor) name what it was asked
	// of, when they apply.
	Role, Job, Target string
	// Note is the operator's note.
	Note string
	// Outcome is done or refused; Detail says what happened.
	Outcome string
	Detail  string
}

// record appends e to the audit log and logs it.
func (d *Dashboard) record(r *http.Request, e AuditEntry) {
	if e.At.IsZero() {
		e.At = d.now()
	}
	e.Remote = r.RemoteAddr
	d.mu.Lock()
	d.audit = append(d.audit, e)
	if len(d.audit) > AuditLen {
		d.audit = d.audit[len(d.audit)-AuditLen:]
	}
	d.mu.Unlock()
	d.log.Info("DashboardAction",
		zap.String("who", e.Who), zap.String("remote", e.Remote), zap.String("action", e.Action),
		zap.String("role", e.Role), zap.String("job", e.Job), zap.String("target", e.Target),
		zap.String("note", e.Note), zap.String("outcome", e.Outcome), zap.String("detail", e.Detail))
}

// Audit returns the audit log, newest first. It is kept in this process's
// memory (AuditLen entries) and written to the Logger.
func (d *Dashboard) Audit() []AuditEntry {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]AuditEntry, len(d.audit))
	for i, e := range d.audit {
		out[len(out)-1-i] = e
	}
	return out
}
