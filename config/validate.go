package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Validate reports every problem with c at once, each naming its key:
// the checks of the core packages' options plus those of the Redis
// client. Load calls it; call it again after changing a Config in code.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, coreErrors("locking", c.Locking.Options().Validate())...)
	if c.Locking.Provider == ProviderRedis && c.Locking.Coordinated() {
		errs = append(errs, c.Locking.Redis.validate()...)
	}
	errs = append(errs, c.Leadership.validate()...)
	errs = append(errs, c.LeaderChannel.validate()...)
	if c.Scheduling.MisfireWindow < 0 {
		errs = append(errs, &KeyError{Key: "scheduling.misfire_window",
			Reason: fmt.Sprintf("%v must not be negative", c.Scheduling.MisfireWindow)})
	}
	return errors.Join(errs...)
}

// validate checks the section for provider redis. An empty addrs is not
// an error here (the app may supply its own client); building a client
// from the section checks it (needClient).
func (r Redis) validate() []error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, &KeyError{Key: "locking.redis." + key, Reason: fmt.Sprintf(format, a...)})
	}
	for _, a := range r.Addrs {
		if i := strings.LastIndexByte(a, ':'); i <= 0 || i == len(a)-1 {
			bad("addrs", "%q is not host:port", a)
		}
	}
	if len(r.Addrs) > 1 && !r.Cluster && r.MasterName == "" {
		bad("addrs", "%d addresses need cluster: true (seed nodes) or master_name (sentinels)", len(r.Addrs))
	}
	if r.Cluster && r.MasterName != "" {
		bad("cluster", "true and master_name %q select both Cluster and Sentinel; choose one", r.MasterName)
	}
	if r.Cluster && r.DB != 0 {
		bad("db", "%d: Redis Cluster has database 0 only", r.DB)
	}
	if r.DB < 0 {
		bad("db", "%d must not be negative", r.DB)
	}
	for _, t := range []struct {
		key string
		d   time.Duration
	}{{"dial_timeout", r.DialTimeout}, {"read_timeout", r.ReadTimeout}, {"write_timeout", r.WriteTimeout}} {
		if t.d <= 0 {
			bad(t.key, "%v must be positive", t.d)
		}
	}
	if (r.TLS.CertFile == "") != (r.TLS.KeyFile == "") {
		bad("tls.cert_file", "cert_file %q and key_file %q: set both or neither", r.TLS.CertFile, r.TLS.KeyFile)
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errs
}

func (l Leadership) validate() []error {
	errs := coreErrors("leadership", l.Options("").Validate())
	roles := make([]string, 0, len(l.Roles))
	for r := range l.Roles {
		roles = append(roles, r)
	}
	slices.Sort(roles)
	for _, r := range roles {
		// The role's own key is checked when its elector is built (K4, K5);
		// here its timing and format, under its config key.
		errs = append(errs, coreErrors("leadership.roles."+r, l.Options(r).Validate())...)
	}
	return errs
}

// coreErrors turns the joined errors of a core Validate (each "pkg: what")
// into KeyErrors under key.
func coreErrors(key string, err error) []error {
	if err == nil {
		return nil
	}
	parts := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		parts = j.Unwrap()
	}
	out := make([]error, len(parts))
	for i, p := range parts {
		msg := p.Error()
		if pre, rest, ok := strings.Cut(msg, ": "); ok && !strings.Contains(pre, " ") {
			msg = rest
		}
		out[i] = &KeyError{Key: key, Reason: msg}
	}
	return out
}

func (c LeaderChannel) validate() []error {
	var errs []error
	if c.Capacity <= 0 {
		errs = append(errs, &KeyError{Key: "leader_channel.capacity", Reason: fmt.Sprintf("%d must be positive", c.Capacity)})
	}
	if c.DropReportInterval < 0 {
		errs = append(errs, &KeyError{Key: "leader_channel.drop_report_interval", Reason: fmt.Sprintf("%v must not be negative", c.DropReportInterval)})
	}
	return errs
}
