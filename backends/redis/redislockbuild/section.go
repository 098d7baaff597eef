package redislockbuild

import (
	"github.com/hostloom/hostloom/config"
)

// Name is the locking.provider value of the backend, and its section:
// locking.redis (config.ProviderRedis).
const Name = config.ProviderRedis

// Config is locking.redis: the client for provider redis
// (config.RedisConfig; the section lives in package config because
// provider redis is the library module's own backend, which config.Load
// accepts without being given it). One address with neither master_name
// nor cluster is a standalone server; master_name selects Sentinel (addrs
// are the sentinels); cluster selects Redis Cluster (addrs are seed
// nodes). Password and SentinelPassword never print themselves.
type Config = config.RedisConfig

// TLSConfig is locking.redis.tls (config.TLSConfig).
type TLSConfig = config.TLSConfig

// Defaults returns the section's defaults (config.RedisDefaults).
func Defaults() Config { return config.RedisDefaults() }

// SectionOf returns the locking.redis section of cfg (a copy): as loaded
// when the configuration was loaded (config.Load decodes it with or
// without the backend), else the defaults.
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
