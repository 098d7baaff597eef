package redislockbuild

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/locking/redislock"
)

// Name is the locking.provider value of the backend, and its section:
// locking.redis.
const Name config.ProviderName = "redis"

// Config is locking.redis: the client for provider redis. One address
// with neither master_name nor cluster is a standalone server; master_name
// selects Sentinel (addrs are the sentinels); cluster selects Redis
// Cluster (addrs are seed nodes).
//
// Password and SentinelPassword are config.Secret values: String,
// MarshalLogObject, JSON and errors never show them.
type Config struct {
	// Addrs are host:port addresses, port 1–65535. Required for provider
	// redis unless the app supplies its own client.
	Addrs []string `koanf:"addrs"`
	// Username for Redis ACLs. Default "".
	Username string `koanf:"username"`
	// Password for AUTH. Default "". Never logged.
	Password config.Secret `koanf:"password"`
	// DB selects the database (standalone and Sentinel only). Default 0.
	DB int `koanf:"db"`
	// MasterName is the Sentinel master set; nonempty selects Sentinel.
	MasterName string `koanf:"master_name"`
	// SentinelUsername authenticates to the sentinels. Default "".
	SentinelUsername string `koanf:"sentinel_username"`
	// SentinelPassword authenticates to the sentinels. Never logged.
	SentinelPassword config.Secret `koanf:"sentinel_password"`
	// Cluster selects Redis Cluster. Default false.
	Cluster bool `koanf:"cluster"`
	// DialTimeout bounds connecting. Default 5s.
	DialTimeout time.Duration `koanf:"dial_timeout"`
	// ReadTimeout bounds each reply. Default 3s.
	ReadTimeout time.Duration `koanf:"read_timeout"`
	// WriteTimeout bounds each write. Default 3s.
	WriteTimeout time.Duration `koanf:"write_timeout"`
	// TLS configures TLS to the servers.
	TLS TLSConfig `koanf:"tls"`
	// Quarantine refuses the acquisition of a key for one lease after
	// the server lost its state (restart without persistence, failover):
	// see redislock.Options.Quarantine (Q3). Default false.
	Quarantine bool `koanf:"quarantine"`
	// MinReplicas counts an acquisition or renewal only once that many
	// replicas acknowledged it (WAIT): see redislock.Options.MinReplicas
	// (Q2). Default 0: no wait.
	MinReplicas int `koanf:"min_replicas"`
	// ReplicaAckTimeout bounds the wait for MinReplicas; below every
	// lease. Default 0: 100ms.
	ReplicaAckTimeout time.Duration `koanf:"replica_ack_timeout"`
}

// TLSConfig is locking.redis.tls.
type TLSConfig struct {
	// Enabled turns TLS on. Default false.
	Enabled bool `koanf:"enabled"`
	// InsecureSkipVerify disables server certificate checks (tests only).
	// Default false.
	InsecureSkipVerify bool `koanf:"insecure_skip_verify"`
	// ServerName overrides the name checked in the server certificate.
	ServerName string `koanf:"server_name"`
	// CAFile is a PEM file of CAs to trust instead of the system pool.
	CAFile string `koanf:"ca_file"`
	// CertFile is a PEM client certificate (mutual TLS); set with KeyFile.
	CertFile string `koanf:"cert_file"`
	// KeyFile is the PEM key of CertFile; set both or neither.
	KeyFile string `koanf:"key_file"`
}

// Defaults returns the section's defaults.
func Defaults() Config {
	return Config{
		DialTimeout:  5 * time.Second,
		ReadTimeout:  3 * time.Second,
		WriteTimeout: 3 * time.Second,
	}
}

// SectionOf returns the locking.redis section of cfg (a copy): as loaded
// when the configuration was loaded with the backend, else the defaults.
func SectionOf(cfg config.LockingConfig) Config {
	if s, ok := cfg.Section(Name).(*Config); ok && s != nil {
		return *s
	}
	return Defaults()
}

// With returns a copy of cfg whose locking.redis section is r, for a
// configuration changed in code.
func With(cfg config.LockingConfig, r Config) config.LockingConfig {
	return cfg.WithBackends(Backend{}).WithSection(Name, &r)
}

// ProviderOptions are the redislock options of the section.
func (r Config) ProviderOptions() redislock.Options {
	return redislock.Options{Quarantine: r.Quarantine, MinReplicas: r.MinReplicas, ReplicaAckTimeout: r.ReplicaAckTimeout}
}

// Validate checks the section for provider redis. An empty addrs is not
// an error here (the app may supply its own client); building a client
// from the section checks it (UniversalOptions).
func (r *Config) Validate(keys config.SectionKeys) []*config.FieldError {
	var errs []*config.FieldError
	bad := func(key, format string, a ...any) {
		errs = append(errs, keys.Errorf(key, format, a...))
	}
	for _, a := range r.Addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			bad("addrs", "%q is not host:port", a)
			continue
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			bad("addrs", "%q: port %q is not a number from 1 to 65535", a, port)
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
	if r.MinReplicas < 0 {
		bad("min_replicas", "%d must not be negative", r.MinReplicas)
	}
	if r.ReplicaAckTimeout < 0 {
		bad("replica_ack_timeout", "%v must not be negative", r.ReplicaAckTimeout)
	}
	if (r.TLS.CertFile == "") != (r.TLS.KeyFile == "") {
		bad("tls.cert_file", "cert_file %q and key_file %q: set both or neither", r.TLS.CertFile, r.TLS.KeyFile)
	}
	return errs
}

// CheckConfig: with locking.redis.min_replicas, the wait for the
// replicas must end well before any role's lease (Q2): an acquisition or
// renewal may take that long.
func (r *Config) CheckConfig(keys config.SectionKeys, c *config.Config) []*config.FieldError {
	if r.MinReplicas <= 0 || r.ReplicaAckTimeout < 0 {
		return nil
	}
	wait := r.ProviderOptions().ReplicaAckTimeout
	if wait == 0 {
		wait = redislock.DefaultReplicaAckTimeout
	}
	var errs []*config.FieldError
	check := func(leaseKey string, lease time.Duration) {
		if lease > 0 && wait >= lease {
			errs = append(errs, keys.Errorf("replica_ack_timeout",
				"%v must be below %s %v (an acquisition or renewal waits that long for the replicas)", wait, leaseKey, lease))
		}
	}
	check("leadership.lease", c.Leadership.Lease)
	roles := make([]string, 0, len(c.Leadership.Roles))
	for role := range c.Leadership.Roles {
		roles = append(roles, role)
	}
	slices.Sort(roles)
	for _, role := range roles {
		if l := c.Leadership.For(role).Lease; l != c.Leadership.Lease {
			check("leadership.roles."+role+".lease", l)
		}
	}
	return errs
}

// String describes the section with the passwords redacted.
func (r Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "addrs=%v username=%q password=%s db=%d", r.Addrs, r.Username, r.Password.String(), r.DB)
	if r.MasterName != "" {
		fmt.Fprintf(&b, " master_name=%q sentinel_username=%q sentinel_password=%s", r.MasterName, r.SentinelUsername, r.SentinelPassword.String())
	}
	fmt.Fprintf(&b, " cluster=%t tls=%t", r.Cluster, r.TLS.Enabled)
	if r.Quarantine {
		b.WriteString(" quarantine=true")
	}
	return b.String()
}

// GoString keeps %#v as safe as %v.
func (r Config) GoString() string { return "redislockbuild.Config{" + r.String() + "}" }

// MarshalLogObject logs the section with the passwords redacted.
func (r Config) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	if err := enc.AddArray("addrs", zapcore.ArrayMarshalerFunc(func(a zapcore.ArrayEncoder) error {
		for _, s := range r.Addrs {
			a.AppendString(s)
		}
		return nil
	})); err != nil {
		return err
	}
	enc.AddString("username", r.Username)
	enc.AddString("password", r.Password.String())
	enc.AddInt("db", r.DB)
	enc.AddString("master_name", r.MasterName)
	enc.AddString("sentinel_username", r.SentinelUsername)
	enc.AddString("sentinel_password", r.SentinelPassword.String())
	enc.AddBool("cluster", r.Cluster)
	enc.AddBool("tls", r.TLS.Enabled)
	enc.AddBool("quarantine", r.Quarantine)
	return nil
}
