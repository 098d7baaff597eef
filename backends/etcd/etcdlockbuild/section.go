package etcdlockbuild

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/locking/etcdlock"
)

// Name is the locking.provider value of the backend, and its section:
// locking.etcd.
const Name config.ProviderName = "etcd"

// Config is locking.etcd: provider etcd.
//
// Password is a config.Secret: String, MarshalLogObject, JSON and errors
// never show it.
type Config struct {
	// Endpoints are the members' client addresses, host:port or
	// http(s)://host:port. Required for provider etcd unless the app
	// supplies its own client.
	Endpoints []string `koanf:"endpoints"`
	// Username authenticates to etcd (its auth enabled). Default "".
	Username string `koanf:"username"`
	// Password of Username. Default "". Never logged.
	Password config.Secret `koanf:"password"`
	// Prefix is prepended to every key the provider stores: printable
	// characters, at most etcdlock.MaxPrefixLength bytes. Default
	// etcdlock.DefaultPrefix ("hostloom/").
	Prefix string `koanf:"prefix"`
	// DialTimeout bounds the start check's request (the client's first,
	// which also authenticates it with a username). Default 5s.
	DialTimeout time.Duration `koanf:"dial_timeout"`
	// TLS configures TLS to the members.
	TLS TLSConfig `koanf:"tls"`
	// ExpiryQuarantine makes a key freed by the end of its lease, rather
	// than by a release, wait one lease before anyone takes it (see
	// etcdlock.Options.ExpiryQuarantine): no two instances lead at once
	// even when etcd revokes a live lease, at the cost of one more lease
	// on a takeover after a crash. Default false.
	ExpiryQuarantine bool `koanf:"expiry_quarantine"`
}

// TLSConfig is locking.etcd.tls.
type TLSConfig struct {
	// Enabled turns TLS on (also implied by https:// endpoints). Default
	// false.
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
	return Config{Prefix: etcdlock.DefaultPrefix, DialTimeout: 5 * time.Second}
}

// SectionOf returns the locking.etcd section of cfg (a copy): as loaded
// when the configuration was loaded with the backend, else the defaults.
func SectionOf(cfg config.LockingConfig) Config {
	if s, ok := cfg.Section(Name).(*Config); ok && s != nil {
		return *s
	}
	return Defaults()
}

// With returns a copy of cfg whose locking.etcd section is e, for a
// configuration changed in code.
func With(cfg config.LockingConfig, e Config) config.LockingConfig {
	return cfg.WithBackends(Backend{}).WithSection(Name, &e)
}

// ProviderOptions are the etcdlock options of the section.
func (e Config) ProviderOptions() etcdlock.Options {
	return etcdlock.Options{Prefix: e.Prefix, ExpiryQuarantine: e.ExpiryQuarantine}
}

// Validate checks the section for provider etcd. An empty endpoints is
// not an error here (the app may supply its own client); building a
// client from the section checks it.
func (e *Config) Validate(keys config.SectionKeys) []*config.FieldError {
	var errs []*config.FieldError
	bad := func(key, format string, a ...any) {
		errs = append(errs, keys.Errorf(key, format, a...))
	}
	for _, ep := range e.Endpoints {
		if err := checkEndpoint(ep); err != nil {
			bad("endpoints", "%q %v", redactEndpoint(ep), err)
		}
	}
	if e.Prefix == "" {
		bad("prefix", `"" is empty: name a prefix (default %s)`, etcdlock.DefaultPrefix)
	} else if err := e.ProviderOptions().Validate(); err != nil {
		reason := strings.TrimPrefix(err.Error(), etcdlock.ErrInvalidOptions.Error()+": ")
		reason = strings.TrimPrefix(reason, fmt.Sprintf("Prefix %q: ", e.Prefix))
		bad("prefix", "%q: %s", e.Prefix, reason)
	}
	if e.DialTimeout <= 0 {
		bad("dial_timeout", "%v must be positive", e.DialTimeout)
	}
	switch {
	case e.Username != "" && e.Password == "":
		bad("username", "%q is set without a password (locking.etcd.password): set both or neither", e.Username)
	case e.Username == "" && e.Password != "":
		bad("password", "is set without a username (locking.etcd.username): set both or neither")
	}
	if (e.TLS.CertFile == "") != (e.TLS.KeyFile == "") {
		bad("tls.cert_file", "cert_file %q and key_file %q: set both or neither", e.TLS.CertFile, e.TLS.KeyFile)
	}
	return errs
}

// checkEndpoint accepts host:port and http(s)://host:port.
func checkEndpoint(ep string) error {
	hostport := ep
	if u, err := url.Parse(ep); err == nil && u.Scheme != "" && u.Host != "" {
		if u.User != nil {
			return errors.New("carries credentials: set locking.etcd.username and locking.etcd.password instead")
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("has scheme %q: want http or https", u.Scheme)
		}
		hostport = u.Host
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || host == "" {
		return errors.New("is not host:port or http(s)://host:port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("has port %q: want a number from 1 to 65535", port)
	}
	return nil
}

// redactEndpoint is ep for an error: a URL's password replaced.
func redactEndpoint(ep string) string {
	if u, err := url.Parse(ep); err == nil && u.User != nil {
		return u.Redacted()
	}
	return ep
}

// ClientConfig returns the *tls.Config the section describes, nil when
// TLS is off. Errors are *config.FieldError values naming the key and
// the file, never file contents.
func (t TLSConfig) ClientConfig(cfg config.LockingConfig) (*tls.Config, error) {
	if !t.Enabled && t.CAFile == "" && t.CertFile == "" {
		return nil, nil
	}
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // opt-in, documented as for tests only
	}
	fail := func(key, format string, a ...any) error {
		return &config.FieldError{Key: "locking.etcd.tls." + key, Source: cfg.Source("locking.etcd.tls." + key), Reason: fmt.Sprintf(format, a...)}
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fail("ca_file", "%q: %v", t.CAFile, pathErr(err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fail("ca_file", "%q: no PEM certificate found", t.CAFile)
		}
		c.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		for _, f := range []struct{ key, path string }{{"cert_file", t.CertFile}, {"key_file", t.KeyFile}} {
			if _, err := os.Stat(f.path); err != nil {
				return nil, fail(f.key, "%q: %v", f.path, pathErr(err))
			}
		}
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fail("cert_file", "%q with key_file %q: %v", t.CertFile, t.KeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// pathErr is the reason of a file error without repeating the path.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fields are the section's keys as String and MarshalLogObject show
// them, the password redacted.
func (e Config) fields() config.Fields {
	return config.Fields{
		{Key: "endpoints", Value: e.Endpoints},
		{Key: "username", Value: e.Username},
		{Key: "password", Value: e.Password},
		{Key: "prefix", Value: e.Prefix},
		{Key: "dial_timeout", Value: e.DialTimeout},
		{Key: "tls", Value: e.TLS.Enabled},
		{Key: "expiry_quarantine", Value: e.ExpiryQuarantine},
	}
}

// String describes the section with the password redacted.
func (e Config) String() string { return e.fields().String() }

// GoString keeps %#v as safe as %v.
func (e Config) GoString() string { return "etcdlockbuild.Config{" + e.String() + "}" }

// MarshalLogObject logs the section with the password redacted.
func (e Config) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return e.fields().MarshalLogObject(enc)
}
