package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hostloom/hostloom/core/leadership"
)

// enum is implemented by the string-valued settings with a fixed set of
// values; the loader and Keys use it to name the allowed values.
type enum interface {
	allowed() []string
}

// parseEnum checks text against the allowed values (case-sensitive).
func parseEnum(text []byte, allowed []string) (string, error) {
	s := string(text)
	if !slices.Contains(allowed, s) {
		return "", fmt.Errorf("%q is not one of %s", s, strings.Join(allowed, ", "))
	}
	return s, nil
}

// Provider selects the lock backend: locking.provider.
type Provider string

// Lock backends.
const (
	// ProviderMemory is an in-process lock: it coordinates the electors of
	// one process only. Default, for development, tests and single
	// instances.
	ProviderMemory Provider = "memory"
	// ProviderRedis is Redis or Valkey (standalone, Sentinel or Cluster),
	// configured under locking.redis.
	ProviderRedis Provider = "redis"
	// ProviderDisabled grants every caller a placeholder lease: nothing is
	// coordinated and leadership.when_uncoordinated applies.
	ProviderDisabled Provider = "disabled"
)

func (Provider) allowed() []string { return []string{"memory", "redis", "disabled"} }

// UnmarshalText accepts memory, redis or disabled.
func (p *Provider) UnmarshalText(text []byte) error {
	s, err := parseEnum(text, p.allowed())
	*p = Provider(s)
	return err
}

// WhenUncoordinated is leadership.when_uncoordinated: follow or lead.
type WhenUncoordinated string

// Policies over a lock that does not coordinate.
const (
	// Follow never leads (leadership.Follow). Default.
	Follow WhenUncoordinated = "follow"
	// Lead leads without coordination (leadership.Lead).
	Lead WhenUncoordinated = "lead"
)

func (WhenUncoordinated) allowed() []string { return []string{"follow", "lead"} }

// UnmarshalText accepts follow or lead.
func (w *WhenUncoordinated) UnmarshalText(text []byte) error {
	s, err := parseEnum(text, w.allowed())
	*w = WhenUncoordinated(s)
	return err
}

// Policy returns the leadership package's value; anything but lead is
// Follow.
func (w WhenUncoordinated) Policy() leadership.WhenUncoordinated {
	if w == Lead {
		return leadership.Lead
	}
	return leadership.Follow
}

// FullMode is leader_channel.full_mode: what a write does when the channel
// is full.
type FullMode string

// Full modes.
const (
	// FullWait blocks the writer until there is room (or leadership ends).
	// Default.
	FullWait FullMode = "wait"
	// FullDropWrite discards the item being written.
	FullDropWrite FullMode = "drop_write"
	// FullDropNewest discards the newest buffered item to make room.
	FullDropNewest FullMode = "drop_newest"
	// FullDropOldest discards the oldest buffered item to make room.
	FullDropOldest FullMode = "drop_oldest"
)

func (FullMode) allowed() []string {
	return []string{"wait", "drop_write", "drop_newest", "drop_oldest"}
}

// UnmarshalText accepts wait, drop_write, drop_newest or drop_oldest.
func (m *FullMode) UnmarshalText(text []byte) error {
	s, err := parseEnum(text, m.allowed())
	*m = FullMode(s)
	return err
}

// Location is a time zone name for scheduling.location: "UTC", "Local", or
// an IANA name such as "Europe/Paris". It is checked when loaded; "" means
// UTC.
type Location string

// UnmarshalText accepts a name time.LoadLocation knows.
func (l *Location) UnmarshalText(text []byte) error {
	if _, err := time.LoadLocation(string(text)); err != nil || len(text) == 0 {
		return fmt.Errorf("%q is not a known time zone (UTC, Local, or an IANA name such as Europe/Paris)", string(text))
	}
	*l = Location(text)
	return nil
}

// Load returns the time zone.
func (l Location) Load() (*time.Location, error) {
	if l == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(string(l))
	if err != nil {
		return nil, fmt.Errorf("config: scheduling.location %q: %w", string(l), err)
	}
	return loc, nil
}
