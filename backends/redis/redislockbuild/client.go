package redislockbuild

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/locking/redislock"
	"github.com/redis/go-redis/v9"
)

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
func (r Config) UniversalOptions() (*redis.UniversalOptions, error) {
	errs := r.Validate(config.LockingConfig{}.SectionKeys(Name))
	if len(r.Addrs) == 0 {
		errs = append(errs, &config.FieldError{Key: "locking.redis.addrs", Reason: "provider redis needs at least one host:port address (or a redis.UniversalClient from the app)"})
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
func (r Config) NewClient() (redis.UniversalClient, error) {
	o, err := r.UniversalOptions()
	if err != nil {
		return nil, err
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

// unwrapPath drops the *fs.PathError wrapper (the path is already named).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
