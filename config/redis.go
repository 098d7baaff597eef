package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/core/locking/redislock"
)

// ProviderRedis is Redis or Valkey (standalone, Sentinel or Cluster),
// configured under locking.redis: the library module's own backend,
// which Load, lockbuild.Build and lockingfx.Module accept without being
// given it. Package backends/redis/redislockbuild builds it.
const ProviderRedis ProviderName = "redis"

// redisBackend is provider redis as Load sees it when the program passes
// no backend of that name: its section, locking.redis (RedisConfig).
type redisBackend struct{}

func (redisBackend) Provider() ProviderName { return ProviderRedis }

func (redisBackend) Section() Section {
	d := RedisDefaults()
	return &d
}

// withDefaultBackends returns backends with the library module's own
// backend, redis, first, unless one of backends has its name: a program
// that passes its own (redislockbuild.Backend) registers it once.
func withDefaultBackends(backends []Backend) []Backend {
	if slices.ContainsFunc(backends, func(b Backend) bool { return b != nil && b.Provider() == ProviderRedis }) {
		return backends
	}
	return append([]Backend{redisBackend{}}, backends...)
}

// RedisConfig is locking.redis: the client for provider redis. One address
// with neither master_name nor cluster is a standalone server; master_name
// selects Sentinel (addrs are the sentinels); cluster selects Redis
// Cluster (addrs are seed nodes).
//
// Password and SentinelPassword are Secret values: String,
// MarshalLogObject, JSON and errors never show them.
type RedisConfig struct {
	// Addrs are host:port addresses, port 1–65535. Required for provider
	// redis unless the app supplies its own client.
	Addrs []string `koanf:"addrs"`
	// Username for Redis ACLs. Default "".
	Username string `koanf:"username"`
	// Password for AUTH. Default "". Never logged.
	Password Secret `koanf:"password"`
	// DB selects the database (standalone and Sentinel only). Default 0.
	DB int `koanf:"db"`
	// MasterName is the Sentinel master set; nonempty selects Sentinel.
	MasterName string `koanf:"master_name"`
	// SentinelUsername authenticates to the sentinels. Default "".
	SentinelUsername string `koanf:"sentinel_username"`
	// SentinelPassword authenticates to the sentinels. Never logged.
	SentinelPassword Secret `koanf:"sentinel_password"`
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

// RedisDefaults returns the defaults of locking.redis.
func RedisDefaults() RedisConfig {
	return RedisConfig{
		DialTimeout:  5 * time.Second,
		ReadTimeout:  3 * time.Second,
		WriteTimeout: 3 * time.Second,
	}
}

// ProviderOptions are the redislock options of the section.
func (r RedisConfig) ProviderOptions() redislock.Options {
	return redislock.Options{Quarantine: r.Quarantine, MinReplicas: r.MinReplicas, ReplicaAckTimeout: r.ReplicaAckTimeout}
}

// Validate checks the section for provider redis. An empty addrs is not
// an error here (the app may supply its own client); building a client
// from the section checks it (UniversalOptions).
func (r *RedisConfig) Validate(keys SectionKeys) []*FieldError {
	var errs []*FieldError
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
func (r *RedisConfig) CheckConfig(keys SectionKeys, c *Config) []*FieldError {
	if r.MinReplicas <= 0 || r.ReplicaAckTimeout < 0 {
		return nil
	}
	wait := r.ProviderOptions().ReplicaAckTimeout
	if wait == 0 {
		wait = redislock.DefaultReplicaAckTimeout
	}
	var errs []*FieldError
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

// fields are the section's keys as String and MarshalLogObject show
// them, the passwords redacted. String leaves out the Sentinel keys
// without Sentinel and quarantine when false.
func (r RedisConfig) fields() Fields {
	return Fields{
		{Key: "addrs", Value: r.Addrs},
		{Key: "username", Value: r.Username},
		{Key: "password", Value: r.Password},
		{Key: "db", Value: r.DB},
		{Key: "master_name", Value: r.MasterName, Brief: true},
		{Key: "sentinel_username", Value: r.SentinelUsername, Brief: true},
		{Key: "sentinel_password", Value: r.SentinelPassword, Brief: true},
		{Key: "cluster", Value: r.Cluster},
		{Key: "tls", Value: r.TLS.Enabled},
		{Key: "quarantine", Value: r.Quarantine, Brief: true},
	}
}

// String describes the section with the passwords redacted.
func (r RedisConfig) String() string { return r.fields().String() }

// GoString keeps %#v as safe as %v.
func (r RedisConfig) GoString() string { return "config.RedisConfig{" + r.String() + "}" }

// MarshalLogObject logs the section with the passwords redacted.
func (r RedisConfig) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return r.fields().MarshalLogObject(enc)
}

// ClientConfig returns the *tls.Config the section describes, nil when
// TLS is off. Errors name the key and the file, never file contents.
func (t TLSConfig) ClientConfig() (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // opt-in, documented as for tests only
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("config: locking.redis.tls.ca_file %q: %w", t.CAFile, unwrapPath(err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("config: locking.redis.tls.ca_file %q: no PEM certificate found", t.CAFile)
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("config: locking.redis.tls.cert_file %q, key_file %q: %w", t.CertFile, t.KeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// UniversalOptions returns the go-redis options the section describes.
// ContextTimeoutEnabled is on, so a caller's context deadline bounds each
// command (the elector relies on it to give up a renewal in time).
func (r RedisConfig) UniversalOptions() (*redis.UniversalOptions, error) {
	errs := r.Validate(LockingConfig{}.SectionKeys(ProviderRedis))
	if len(r.Addrs) == 0 {
		errs = append(errs, &FieldError{Key: "locking.redis.addrs", Reason: "provider redis needs at least one host:port address (or a redis.UniversalClient from the app)"})
	}
	if len(errs) > 0 {
		joined := make([]error, len(errs))
		for i, e := range errs {
			joined[i] = e
		}
		return nil, errors.Join(joined...)
	}
	tc, err := r.TLS.ClientConfig()
	if err != nil {
		return nil, err
	}
	return &redis.UniversalOptions{
		Addrs:                 r.Addrs,
		Username:              r.Username,
		Password:              r.Password.Value(),
		DB:                    r.DB,
		MasterName:            r.MasterName,
		SentinelUsername:      r.SentinelUsername,
		SentinelPassword:      r.SentinelPassword.Value(),
		IsClusterMode:         r.Cluster,
		DialTimeout:           r.DialTimeout,
		ReadTimeout:           r.ReadTimeout,
		WriteTimeout:          r.WriteTimeout,
		ContextTimeoutEnabled: true,
		TLSConfig:             tc,
		// Reconnect within milliseconds of a restarted server's return,
		// rather than after go-redis' once-a-second probe once enough dials
		// failed: a leader learns at once that the server lost its lease.
		Dialer: redislock.Dialer(tc),
	}, nil
}

// NewClient builds the client the section describes: a *redis.ClusterClient
// when cluster is set, a Sentinel failover *redis.Client when master_name is
// set, otherwise a *redis.Client for the one address. It does not connect;
// the caller closes the client.
func (r RedisConfig) NewClient() (redis.UniversalClient, error) {
	return r.NewClientWith(nil)
}

// NewClientWith is NewClient with the options changed by tune first (when
// not nil): a short-lived command's client without retries, say.
func (r RedisConfig) NewClientWith(tune func(*redis.UniversalOptions)) (redis.UniversalClient, error) {
	o, err := r.UniversalOptions()
	if err != nil {
		return nil, err
	}
	if tune != nil {
		tune(o)
	}
	switch {
	case r.Cluster:
		return redis.NewClusterClient(o.Cluster()), nil
	case r.MasterName != "":
		return redis.NewFailoverClient(o.Failover()), nil
	default:
		return redis.NewClient(o.Simple()), nil
	}
}
