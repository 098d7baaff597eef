package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/backends/redis/redislockbuild"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// writeFile writes a YAML file into a fresh temporary directory.
func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// fieldErrors flattens a joined error into its *FieldError parts.
func fieldErrors(err error) []*config.FieldError {
	var out []*config.FieldError
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, p := range j.Unwrap() {
				walk(p)
			}
			return
		}
		var ke *config.FieldError
		if errors.As(e, &ke) {
			out = append(out, ke)
		}
	}
	walk(err)
	return out
}

// memory chooses the in-process lock, which every configuration must do
// explicitly (G6).
var memory = []string{"HOSTLOOM_LOCKING__PROVIDER=memory"}

func TestLoad_G6_NoProviderFailsNamingKeyAndChoices(t *testing.T) {
	path := writeFile(t, "leadership:\n  lease: 20s\n")
	for _, tt := range []struct {
		name string
		path string
		opts []config.LoadOption
		want string
	}{
		{"nothing", "", []config.LoadOption{config.WithEnviron(nil)},
			"config: locking.provider: is not set: choose memory, redis, disabled (memory coordinates this process only) (not set in env HOSTLOOM_LOCKING__PROVIDER)"},
		{"missing optional file", filepath.Join(t.TempDir(), "nope.yaml"), []config.LoadOption{config.Optional(), config.WithEnviron(nil)},
			"(not set in env HOSTLOOM_LOCKING__PROVIDER)"},
		{"file without provider", path, []config.LoadOption{config.WithYAML("embedded", []byte("locking:\n  namespace: x\n")), config.WithEnviron(nil), config.WithEnvPrefix("APP_")},
			"(not set in yaml embedded, file " + path + ", env APP_LOCKING__PROVIDER)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Load(tt.path, tt.opts...)
			if err == nil || c != nil {
				t.Fatalf("Load = %+v, %v; want an error naming locking.provider", c, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error\n%v\ndoes not contain\n%s", err, tt.want)
			}
			fe := fieldErrors(err)
			if len(fe) != 1 || fe[0].Key != "locking.provider" {
				t.Fatalf("field errors %v, want exactly one for locking.provider", fe)
			}
		})
	}
	if err := config.Defaults().Validate(); err == nil || !strings.Contains(err.Error(), "locking.provider: is not set: choose memory, redis, disabled") {
		t.Errorf("Defaults().Validate() = %v, want the missing provider", err)
	}
}

// TestLoad_RemovedKeysSayWhatToWrite: locking.enabled said what
// locking.provider: disabled says, and a section-wide leadership.lock_key
// cannot serve several roles; each is an error naming the key, its source
// and what to write instead, not an unknown key.
func TestLoad_RemovedKeysSayWhatToWrite(t *testing.T) {
	path := writeFile(t, "locking:\n  provider: redis\n  enabled: false\nleadership:\n  lock_key: billing-exact\n")
	_, err := config.Load(path, config.WithEnviron([]string{"HOSTLOOM_LOCKING__ENABLED=true"}))
	fe := fieldErrors(err)
	if len(fe) != 2 {
		t.Fatalf("errors %v, want one for each removed key", err)
	}
	for i, want := range []string{
		"config: leadership.lock_key: is no longer a section-wide key, since one exact key cannot serve several roles: set leadership.roles.<role>.lock_key for the role, or leadership.lock_key_format (file " + path + ")",
		"config: locking.enabled: is no longer a key: write locking.provider: disabled for a lock that grants everyone, or remove it (env HOSTLOOM_LOCKING__ENABLED)",
	} {
		if got := fe[i].Error(); got != want {
			t.Errorf("error %d\n%s\nwant\n%s", i, got, want)
		}
	}
	for _, k := range config.Keys() {
		if k.Name == "locking.enabled" || k.Name == "leadership.lock_key" {
			t.Errorf("Keys lists the removed key %s", k.Name)
		}
	}
}

func TestLoad_DefaultsWithMemoryChosen(t *testing.T) {
	c, err := config.Load("", config.WithEnviron(memory))
	if err != nil {
		t.Fatal(err)
	}
	d := config.Defaults()
	if c.Locking.Provider != config.ProviderMemory {
		t.Errorf("provider %q, want memory", c.Locking.Provider)
	}
	if got, lo := c.Locking.Options(), (locking.Options{MaxKeyLength: locking.DefaultMaxKeyLength,
		MaxLease: locking.DefaultMaxLease, MaxHold: locking.DefaultMaxHold}); got != lo || !reflect.DeepEqual(redislockbuild.SectionOf(c.Locking), redislockbuild.Defaults()) {
		t.Errorf("locking = %+v, want the defaults %+v", c.Locking, lo)
	}
	if got, want := c.Leadership.Options("billing"), d.Leadership.Options("billing"); got != want || c.Leadership.Roles != nil || c.Leadership.Identity != "" {
		t.Errorf("leadership = %+v, want %+v", c.Leadership, d.Leadership)
	}
	if c.LeaderChannel != d.LeaderChannel || c.Scheduling.Location != d.Scheduling.Location ||
		c.Scheduling.MisfireWindow != d.Scheduling.MisfireWindow || c.Scheduling.SlotStore != d.Scheduling.SlotStore || c.Scheduling.Jobs != nil {
		t.Errorf("leader_channel %+v, scheduling %+v: want the defaults", c.LeaderChannel, c.Scheduling)
	}
	if got := c.Source("locking.provider"); got != "env HOSTLOOM_LOCKING__PROVIDER" {
		t.Errorf("Source(locking.provider) = %q", got)
	}
	if got := c.Source("leadership.lease"); got != "default" {
		t.Errorf("Source(leadership.lease) = %q, want default", got)
	}
	if got := d.Source("leadership.lease"); got != "" {
		t.Errorf("Defaults().Source = %q, want \"\" for a configuration built in code", got)
	}
}

const fullYAML = `
locking:
  provider: redis
  namespace: billing
  use_hash_tags: true
  max_key_length: 256
  max_lease: 1m
  max_hold: 30m
  redis:
    addrs: [a:6379, "b:6379"]
    username: app
    password: s3cret-pw
    db: 0
    master_name: ""
    sentinel_username: ""
    sentinel_password: ""
    cluster: true
    dial_timeout: 1s
    read_timeout: 500ms
    write_timeout: 600ms
    tls:
      enabled: true
      insecure_skip_verify: false
      server_name: redis.internal
      ca_file: /etc/ca.pem
      cert_file: ""
      key_file: ""
leadership:
  lease: 20s
  renew_interval: 6s
  retry_interval: 3s
  safety_margin: 100ms
  when_uncoordinated: lead
  lock_key_format: "election:eu:{role}"
  identity: pod-1
  balance: true
  priority: 2
  roles:
    billing:
      lease: 40s
      renew_interval: 10s
      retry_interval: 1s
      safety_margin: 1s
      when_uncoordinated: follow
      lock_key_format: "x:{role}"
      lock_key: billing-exact
      balance: false
      priority: -3
leader_channel:
  capacity: 8
  full_mode: drop_oldest
  drain_on_loss: true
  drop_report_interval: 1m
scheduling:
  location: Europe/Paris
  misfire_window: 2m
  slot_store: false
`

func TestLoad_FileSetsEveryKey(t *testing.T) {
	path := writeFile(t, fullYAML)
	c, err := config.Load(path, config.WithEnviron(nil))
	if err != nil {
		t.Fatal(err)
	}
	d := func(s string) *time.Duration { v, _ := time.ParseDuration(s); return &v }
	str := func(s string) *string { return &s }
	follow, no, prio := leadership.Follow, false, -3
	wantRedis := config.RedisConfig{
		Addrs: []string{"a:6379", "b:6379"}, Username: "app", Password: "s3cret-pw", Cluster: true,
		DialTimeout: time.Second, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 600 * time.Millisecond,
		TLS: config.TLSConfig{Enabled: true, ServerName: "redis.internal", CAFile: "/etc/ca.pem"},
	}
	if c.Locking.Provider != config.ProviderRedis || !c.Locking.Coordinated() || !reflect.DeepEqual(redislockbuild.SectionOf(c.Locking), wantRedis) {
		t.Errorf("locking = %#v", c.Locking)
	}
	if got, want := c.Locking.Options(), (locking.Options{Namespace: "billing", UseHashTags: true,
		MaxKeyLength: 256, MaxLease: time.Minute, MaxHold: 30 * time.Minute}); got != want {
		t.Errorf("locking options %+v, want %+v", got, want)
	}
	if got, want := c.Leadership.Options("other"), (leadership.Options{Lease: 20 * time.Second, RenewInterval: 6 * time.Second,
		RetryInterval: 3 * time.Second, SafetyMargin: 100 * time.Millisecond, WhenUncoordinated: leadership.Lead,
		LockKeyFormat: "election:eu:{role}", Balance: true, Priority: 2}); got != want {
		t.Errorf("leadership options %+v, want %+v", got, want)
	}
	if c.Leadership.Identity != "pod-1" {
		t.Errorf("identity %q", c.Leadership.Identity)
	}
	wantRoles := map[string]config.RoleOverrides{"billing": {
		Lease: d("40s"), RenewInterval: d("10s"), RetryInterval: d("1s"), SafetyMargin: d("1s"),
		WhenUncoordinated: &follow, LockKeyFormat: str("x:{role}"), LockKey: str("billing-exact"),
		Balance: &no, Priority: &prio,
	}}
	if !reflect.DeepEqual(c.Leadership.Roles, wantRoles) {
		t.Errorf("roles = %#v", c.Leadership.Roles)
	}
	if want := (config.LeaderChannelConfig{Capacity: 8, FullMode: leadership.DropOldest, DrainOnLoss: true, DropReportInterval: time.Minute}); c.LeaderChannel != want {
		t.Errorf("leader_channel %+v, want %+v", c.LeaderChannel, want)
	}
	if sc := c.Scheduling; sc.Location != "Europe/Paris" || sc.MisfireWindow != 2*time.Minute || sc.SlotStore || sc.Jobs != nil {
		t.Errorf("scheduling %+v, want Europe/Paris, 2m, no slot store, no jobs", sc)
	}
	if got := c.Leadership.For("billing"); got.Lease != 40*time.Second || got.LockKey != "billing-exact" || got.WhenUncoordinated != leadership.Follow ||
		got.Identity != "pod-1" || got.SafetyMargin != time.Second || got.Balance || got.Priority != -3 {
		t.Errorf("For(billing) = %+v", got)
	}
	if got := c.Leadership.For("other"); got.Lease != 20*time.Second || got.LockKeyFormat != "election:eu:{role}" || got.Roles != nil {
		t.Errorf("For(other) = %+v", got)
	}
	for _, key := range []string{"leadership.roles.billing.priority", "leadership.roles.billing", "locking.redis.password"} {
		if got := c.Source(key); got != "file "+path {
			t.Errorf("Source(%s) = %q, want the file", key, got)
		}
	}
	if got := c.Leadership.Source("leadership.roles.billing.lease"); got != "file "+path {
		t.Errorf("Leadership.Source = %q", got)
	}
	if got := c.Locking.Source("locking.namespace"); got != "file "+path {
		t.Errorf("Locking.Source = %q", got)
	}
}

func TestLoad_F2_EnvOverridesFile(t *testing.T) {
	path := writeFile(t, "leadership:\n  lease: 20s\nlocking:\n  namespace: fromfile\n")
	c, err := config.Load(path, config.WithEnviron([]string{
		"HOSTLOOM_LEADERSHIP__LEASE=30s",
		"HOSTLOOM_LOCKING__PROVIDER=redis",
		"HOSTLOOM_LOCKING__REDIS__ADDRS=a:6379, b:6379",
		"HOSTLOOM_LOCKING__REDIS__CLUSTER=true",
		"HOSTLOOM_LOCKING__USE_HASH_TAGS=true",
		"HOSTLOOM_LOCKING__MAX_KEY_LENGTH=100",
		"HOSTLOOM_LEADERSHIP__ROLES__BILLING__RETRY_INTERVAL=750ms",
		"HOSTLOOM_Leader_Channel__Full_Mode=drop_write",
		"HOSTLOOM_REQUIRE_REDIS=1", // not configuration: another tool's variable
		"OTHER_LEADERSHIP__LEASE=banana",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Leadership.Lease != 30*time.Second {
		t.Errorf("lease = %v, want the env value 30s", c.Leadership.Lease)
	}
	if c.Locking.Namespace != "fromfile" || !c.Locking.UseHashTags || c.Locking.MaxKeyLength != 100 {
		t.Errorf("locking = %+v", c.Locking)
	}
	if !reflect.DeepEqual(redislockbuild.SectionOf(c.Locking).Addrs, []string{"a:6379", "b:6379"}) {
		t.Errorf("addrs = %q, want [a:6379 b:6379]", redislockbuild.SectionOf(c.Locking).Addrs)
	}
	if r := c.Leadership.For("billing"); r.RetryInterval != 750*time.Millisecond || r.Lease != 30*time.Second {
		t.Errorf("billing = %+v", r)
	}
	if c.LeaderChannel.FullMode != leadership.DropWrite {
		t.Errorf("full_mode = %q", c.LeaderChannel.FullMode)
	}
}

func TestLoad_WithYAMLLayersBeforeFile(t *testing.T) {
	path := writeFile(t, "leadership:\n  lease: 20s\n")
	c, err := config.Load(path,
		config.WithYAML("embedded", []byte("locking:\n  provider: memory\nleadership:\n  lease: 12s\n  retry_interval: 1s\n")),
		config.WithEnviron(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Leadership.Lease != 20*time.Second || c.Leadership.RetryInterval != time.Second {
		t.Errorf("lease %v retry %v, want file 20s over embedded, embedded 1s", c.Leadership.Lease, c.Leadership.RetryInterval)
	}
}

func TestLoad_F2_BadValuesNameKeyValueAndSource(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  []string
		want []string // substrings of the error
	}{
		{
			name: "env duration",
			env:  []string{"HOSTLOOM_LEADERSHIP__LEASE=banana"},
			want: []string{`config: leadership.lease: invalid duration "banana" (use a unit, e.g. 15s, 500ms, 1m30s) (env HOSTLOOM_LEADERSHIP__LEASE)`},
		},
		{
			name: "file duration without unit",
			yaml: "leadership:\n  lease: 20\n",
			want: []string{"leadership.lease: expected a duration with a unit such as 15s, got 20 (file "},
		},
		{
			name: "unknown file key",
			yaml: "leadership:\n  leese: 10s\n",
			want: []string{"config: leadership.leese: unknown key (file "},
		},
		{
			name: "unknown top-level key",
			yaml: "lockin:\n  provider: redis\n",
			want: []string{"lockin.provider: unknown key"},
		},
		{
			name: "section for a value",
			yaml: "leadership:\n  lease:\n    seconds: 3\n",
			want: []string{"config: leadership.lease: expected a duration with a unit such as 15s, got a section (file "},
		},
		{
			name: "unknown env key with a single underscore",
			env:  []string{"HOSTLOOM_LEADERSHIP_LEASE=20s"},
			want: []string{"config: leadership_lease: unknown key (env HOSTLOOM_LEADERSHIP_LEASE)"},
		},
		{
			name: "bad enum",
			yaml: "locking:\n  provider: etcd\n",
			want: []string{`locking.provider: "etcd" is not one of memory, redis, disabled (the providers this program links)`},
		},
		{
			name: "bad env enum",
			env:  []string{"HOSTLOOM_LEADERSHIP__WHEN_UNCOORDINATED=Lead"},
			want: []string{`leadership.when_uncoordinated: "Lead" is not one of follow, lead (env HOSTLOOM_LEADERSHIP__WHEN_UNCOORDINATED)`},
		},
		{
			name: "bad int and bool",
			yaml: "locking:\n  max_key_length: many\n  use_hash_tags: yes please\n",
			want: []string{`locking.max_key_length: invalid integer "many"`, `locking.use_hash_tags: invalid boolean "yes please"`},
		},
		{
			name: "float for int",
			yaml: "leader_channel:\n  capacity: 1.5\n",
			want: []string{"leader_channel.capacity: expected an integer, got 1.5"},
		},
		{
			name: "value for a section",
			env:  []string{"HOSTLOOM_LEADERSHIP=20s"},
			want: []string{`config: leadership: is a section, not a value: got "20s" (env HOSTLOOM_LEADERSHIP)`},
		},
		{
			name: "null leaf",
			yaml: "locking:\n  namespace:\n",
			want: []string{"locking.namespace: has no value"},
		},
		{
			name: "bad time zone",
			yaml: "scheduling:\n  location: Mars/Olympus\n",
			want: []string{`scheduling.location: "Mars/Olympus" is not a known time zone`},
		},
		{
			name: "list item not a string",
			yaml: "locking:\n  provider: redis\n  redis:\n    addrs: [{host: a}]\n",
			want: []string{"locking.redis.addrs: item 0: expected a string, got a section"},
		},
		{
			name: "case-insensitive duplicate env",
			env:  []string{"HOSTLOOM_LEADERSHIP__LEASE=20s", "HOSTLOOM_leadership__lease=30s"},
			want: []string{"leadership.lease: also set by HOSTLOOM_LEADERSHIP__LEASE (names are case-insensitive) (env HOSTLOOM_leadership__lease)"},
		},
		{
			name: "T1 renew interval over half the lease",
			yaml: "leadership:\n  lease: 10s\n  renew_interval: 6s\n",
			want: []string{"config: leadership.renew_interval: renew_interval 6s exceeds half of lease 10s (file "},
		},
		{
			name: "role override checked with the role's key",
			yaml: "leadership:\n  roles:\n    billing:\n      lease: 4s\n",
			want: []string{"config: leadership.roles.billing.lease: renew_interval 5s exceeds half of lease 4s (file ", "app.yaml; leadership.renew_interval: default)"},
		},
		{
			name: "K2 format without role",
			env:  []string{"HOSTLOOM_LEADERSHIP__LOCK_KEY_FORMAT=leader"},
			want: []string{`config: leadership.lock_key_format: lock_key_format "leader" must contain {role} (env HOSTLOOM_LEADERSHIP__LOCK_KEY_FORMAT)`},
		},
		{
			name: "L2 hash tags without namespace",
			yaml: "locking:\n  use_hash_tags: true\n",
			want: []string{`config: locking.use_hash_tags: use_hash_tags requires a namespace, namespace is "" (file `, `app.yaml; locking.namespace: default)`},
		},
		{
			name: "several addresses without a mode",
			env:  []string{"HOSTLOOM_LOCKING__PROVIDER=redis", "HOSTLOOM_LOCKING__REDIS__ADDRS=a:1,b:2"},
			want: []string{"config: locking.redis.addrs: 2 addresses need cluster: true (seed nodes) or master_name (sentinels) (env HOSTLOOM_LOCKING__REDIS__ADDRS)"},
		},
		{
			name: "redis address without port",
			env:  []string{"HOSTLOOM_LOCKING__PROVIDER=redis", "HOSTLOOM_LOCKING__REDIS__ADDRS=localhost"},
			want: []string{`config: locking.redis.addrs: "localhost" is not host:port (env HOSTLOOM_LOCKING__REDIS__ADDRS)`},
		},
		{
			name: "O4 redis port out of range",
			yaml: "locking:\n  provider: redis\n  redis:\n    addrs: [\"a:99999\", \"b:0\", \"[::1]:6379\", \"c:x\"]\n    cluster: true\n",
			want: []string{
				`config: locking.redis.addrs: "a:99999": port "99999" is not a number from 1 to 65535 (file `,
				`config: locking.redis.addrs: "b:0": port "0" is not a number from 1 to 65535 (file `,
				`config: locking.redis.addrs: "c:x": port "x" is not a number from 1 to 65535 (file `,
			},
		},
		{
			name: "Q2 negative min_replicas and replica_ack_timeout",
			env:  []string{"HOSTLOOM_LOCKING__PROVIDER=redis", "HOSTLOOM_LOCKING__REDIS__MIN_REPLICAS=-1", "HOSTLOOM_LOCKING__REDIS__REPLICA_ACK_TIMEOUT=-1s"},
			want: []string{
				"config: locking.redis.min_replicas: -1 must not be negative (env HOSTLOOM_LOCKING__REDIS__MIN_REPLICAS)",
				"config: locking.redis.replica_ack_timeout: -1s must not be negative (env HOSTLOOM_LOCKING__REDIS__REPLICA_ACK_TIMEOUT)",
			},
		},
		{
			name: "Q2 replica_ack_timeout not below a lease",
			yaml: "locking:\n  provider: redis\n  redis:\n    min_replicas: 1\n    replica_ack_timeout: 2s\nleadership:\n  roles:\n    fast:\n      lease: 2s\n      renew_interval: 500ms\n",
			want: []string{"config: locking.redis.replica_ack_timeout: 2s must be below leadership.roles.fast.lease 2s (an acquisition or renewal waits that long for the replicas) (file "},
		},
		{
			name: "redis cluster and sentinel",
			yaml: "locking:\n  provider: redis\n  redis:\n    addrs: [a:1]\n    cluster: true\n    master_name: mymaster\n",
			want: []string{`locking.redis.cluster: true and master_name "mymaster" select both Cluster and Sentinel`},
		},
		{
			name: "T3 cadence over the longest wait",
			yaml: "leadership:\n  roles:\n    slow:\n      retry_interval: 48h\n",
			want: []string{"config: leadership.roles.slow.retry_interval: retry_interval 48h0m0s exceeds the longest wait 24h0m0s (file "},
		},
		{
			name: "negative durations",
			yaml: "locking:\n  max_lease: -1s\nscheduling:\n  misfire_window: -1m\n",
			want: []string{"config: locking.max_lease: max_lease -1s must not be negative (file ", "config: scheduling.misfire_window: -1m0s must not be negative (file "},
		},
		{
			name: "O4 negative lease names key and variable",
			env:  []string{"HOSTLOOM_LEADERSHIP__LEASE=-5s"},
			want: []string{"config: leadership.lease: lease -5s must be positive (env HOSTLOOM_LEADERSHIP__LEASE)"},
		},
		{
			name: "G4 safety margin not below renew interval",
			env:  []string{"HOSTLOOM_LEADERSHIP__SAFETY_MARGIN=5s"},
			want: []string{"config: leadership.safety_margin: safety_margin 5s must be at least 0 and below renew_interval 5s (env HOSTLOOM_LEADERSHIP__SAFETY_MARGIN; leadership.renew_interval: default)"},
		},
		{
			name: "G4 role safety margin negative",
			yaml: "leadership:\n  renew_interval: 4s\n  roles:\n    billing:\n      safety_margin: -1ms\n",
			want: []string{"config: leadership.roles.billing.safety_margin: safety_margin -1ms must be at least 0 and below renew_interval 4s (file "},
		},
		{
			name: "B2 priority outside int32",
			env:  []string{"HOSTLOOM_LEADERSHIP__ROLES__BILLING__PRIORITY=3000000000"},
			want: []string{"config: leadership.roles.billing.priority: priority 3000000000 is outside the int32 range (env HOSTLOOM_LEADERSHIP__ROLES__BILLING__PRIORITY)"},
		},
		{
			name: "B1 balance not a boolean",
			yaml: "leadership:\n  balance: sometimes\n",
			want: []string{`config: leadership.balance: invalid boolean "sometimes" (use true or false) (file `},
		},
		{
			name: "enum in another spelling",
			yaml: "leader_channel:\n  full_mode: DropOldest\n",
			want: []string{`config: leader_channel.full_mode: "DropOldest" is not one of wait, drop_write, drop_newest, drop_oldest (file `},
		},
		{
			name: "enum as a number",
			yaml: "leadership:\n  when_uncoordinated: 2\n",
			want: []string{`config: leadership.when_uncoordinated: expected one of follow, lead, got 2 (file `},
		},
		{
			name: "channel capacity",
			yaml: "leader_channel:\n  capacity: 0\n",
			want: []string{"config: leader_channel.capacity: 0 must be positive (file "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.yaml != "" {
				path = writeFile(t, tt.yaml)
			}
			env := tt.env
			if !strings.Contains(tt.yaml, "provider:") && !strings.Contains(strings.Join(env, " "), "PROVIDER") {
				env = append(env, memory...)
			}
			c, err := config.Load(path, config.WithEnviron(env))
			if err == nil {
				t.Fatalf("Load succeeded: %+v", c)
			}
			if c != nil {
				t.Errorf("Load returned a config with its error")
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error\n%s\ndoes not contain\n%s", msg, w)
				}
			}
			// O4: every problem names its dotted key and its source.
			fe := fieldErrors(err)
			if len(fe) == 0 {
				t.Fatalf("no *FieldError in %v", err)
			}
			for _, e := range fe {
				if e.Key == "" || e.Source == "" || e.Reason == "" {
					t.Errorf("error %#v lacks its key, source or reason", e)
				}
			}
		})
	}
}

func TestLoad_F2_AllProblemsAtOnce(t *testing.T) {
	path := writeFile(t, "leadership:\n  lease: soon\n  leese: 1s\nlocking:\n  provider: etcd\n")
	_, err := config.Load(path, config.WithEnviron([]string{
		"HOSTLOOM_LEADER_CHANNEL__CAPACITY=lots",
		"HOSTLOOM_SCHEDULING__NOPE=1",
	}))
	got := fieldErrors(err)
	var keys []string
	for _, ke := range got {
		keys = append(keys, ke.Key)
	}
	want := []string{"leadership.lease", "leadership.leese", "locking.provider", "leader_channel.capacity", "scheduling.nope"}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys in error = %q, want %q\n%v", keys, want, err)
	}
	if !strings.HasPrefix(got[0].Source, "file ") || got[3].Source != "env HOSTLOOM_LEADER_CHANNEL__CAPACITY" {
		t.Errorf("sources %q, %q", got[0].Source, got[3].Source)
	}
}

func TestLoad_MissingAndUnreadableFiles(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := config.Load(missing, config.WithEnviron(nil))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("config: file %q: no such file or directory", missing)) {
		t.Errorf("missing file: %v", err)
	}
	c, err := config.Load(missing, config.Optional(), config.WithEnviron(memory))
	if err != nil || c.Locking.Provider != config.ProviderMemory || c.Leadership.Lease != config.Defaults().Leadership.Lease {
		t.Errorf("optional missing file: %v, %+v", err, c)
	}
	dir := t.TempDir()
	if _, err := config.Load(dir, config.Optional(), config.WithEnviron(nil)); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
	if os.Geteuid() != 0 { // root reads anything
		p := writeFile(t, "leadership:\n  lease: 20s\n")
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := config.Load(p, config.Optional(), config.WithEnviron(nil)); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("unreadable optional file: %v", err)
		}
	}
}

func TestLoad_YAMLSyntaxErrorKeepsLine(t *testing.T) {
	path := writeFile(t, "leadership:\n  lease: 20s\nlocking:\n  provider: memory\n    namespace: x\n")
	_, err := config.Load(path, config.WithEnviron([]string{"HOSTLOOM_LEADERSHIP__LEASE=banana"}))
	if err == nil {
		t.Fatal("Load succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "config: file "+path+": yaml: line 5:") {
		t.Errorf("error %q lacks the file and line", msg)
	}
	dup := writeFile(t, "leadership:\n  lease: 20s\n  lease: 30s\n")
	if _, err := config.Load(dup, config.WithEnviron(nil)); err == nil || !strings.Contains(err.Error(), `line 3: mapping key "lease" already defined at line 2`) {
		t.Errorf("duplicate key: %v", err)
	}
	if !strings.Contains(msg, "leadership.lease") {
		t.Errorf("error %q stopped at the syntax error; the env problem is missing", msg)
	}
}

func TestLoad_F3_PasswordNeverInErrors(t *testing.T) {
	const pw = "hunter2-very-secret"
	tests := []struct {
		name string
		yaml string
		env  []string
	}{
		{"password set, other errors", "locking:\n  provider: etcd\n  redis:\n    password: " + pw + "\n", nil},
		{"password is a section", "locking:\n  redis:\n    password:\n      value: " + pw + "\n", nil},
		{"password is a list", "locking:\n  redis:\n    password: [" + pw + "]\n", nil},
		{"misspelt password key", "locking:\n  redis:\n    pasword: " + pw + "\n", nil},
		{"sentinel password as a list", "locking:\n  redis:\n    sentinel_password: [" + pw + "]\n", nil},
		{"document is the password", pw + "\n", nil},
		{"env password with errors", "", []string{"HOSTLOOM_LOCKING__REDIS__PASSWORD=" + pw, "HOSTLOOM_LOCKING__REDIS__PASWORD=" + pw, "HOSTLOOM_LOCKING__PROVIDER=redis"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.yaml != "" {
				path = writeFile(t, tt.yaml)
			}
			_, err := config.Load(path, config.WithEnviron(tt.env))
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if strings.Contains(err.Error(), pw) {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
}

func TestConfig_F3_PasswordNeverPrintedOrLogged(t *testing.T) {
	const pw, spw = "hunter2-very-secret", "sentinel-secret-pw"
	c, err := config.Load("", config.WithEnviron([]string{
		"HOSTLOOM_LOCKING__PROVIDER=redis",
		"HOSTLOOM_LOCKING__REDIS__ADDRS=127.0.0.1:6379",
		"HOSTLOOM_LOCKING__REDIS__PASSWORD=" + pw,
		"HOSTLOOM_LOCKING__REDIS__MASTER_NAME=mymaster",
		"HOSTLOOM_LOCKING__REDIS__SENTINEL_PASSWORD=" + spw,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if redislockbuild.SectionOf(c.Locking).Password.Value() != pw {
		t.Fatalf("Value() = %q, want the password", redislockbuild.SectionOf(c.Locking).Password.Value())
	}
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	log.Info("config", zap.Object("redis", redislockbuild.SectionOf(c.Locking)), zap.Any("all", c), zap.Stringer("pw", redislockbuild.SectionOf(c.Locking).Password))
	js, _ := json.Marshal(c)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%v %+v %#v %s %v %#v %q", c, c, c, redislockbuild.SectionOf(c.Locking), *c, *c, redislockbuild.SectionOf(c.Locking).Password)
	for _, e := range logs.All() {
		fmt.Fprintf(&buf, "%v", e.ContextMap())
	}
	buf.Write(js)
	out := buf.String()
	if strings.Contains(out, pw) || strings.Contains(out, spw) {
		t.Fatalf("a password leaked:\n%s", out)
	}
	if !strings.Contains(out, "[redacted]") {
		t.Fatalf("no redaction marker in\n%s", out)
	}
	if got := redislockbuild.SectionOf(c.Locking).String(); !strings.Contains(got, "password=[redacted]") || !strings.Contains(got, "addrs=[127.0.0.1:6379]") {
		t.Errorf("String() = %q", got)
	}
	if got := config.Secret("").String(); got != "" {
		t.Errorf("empty secret String() = %q", got)
	}
}

func TestKeys_CoverEveryField(t *testing.T) {
	keys := config.Keys()
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k.Name] {
			t.Errorf("duplicate key %q", k.Name)
		}
		seen[k.Name] = true
	}
	for _, w := range []config.Key{
		{Name: "leadership.lease", Type: "duration", Default: "15s", Env: "HOSTLOOM_LEADERSHIP__LEASE"},
		{Name: "locking.provider", Type: "provider name", Default: "required", Env: "HOSTLOOM_LOCKING__PROVIDER"},
		{Name: "leadership.safety_margin", Type: "duration", Default: "0s", Env: "HOSTLOOM_LEADERSHIP__SAFETY_MARGIN"},
		{Name: "leadership.balance", Type: "bool", Default: "false", Env: "HOSTLOOM_LEADERSHIP__BALANCE"},
		{Name: "leadership.roles.<role>.priority", Type: "int", Default: "leadership.priority", Env: "HOSTLOOM_LEADERSHIP__ROLES__<ROLE>__PRIORITY"},
		{Name: "leadership.roles.<role>.safety_margin", Type: "duration", Default: "leadership.safety_margin", Env: "HOSTLOOM_LEADERSHIP__ROLES__<ROLE>__SAFETY_MARGIN"},
		{Name: "leader_channel.full_mode", Type: "wait | drop_write | drop_newest | drop_oldest", Default: "wait", Env: "HOSTLOOM_LEADER_CHANNEL__FULL_MODE"},
		{Name: "leadership.when_uncoordinated", Type: "follow | lead", Default: "follow", Env: "HOSTLOOM_LEADERSHIP__WHEN_UNCOORDINATED"},
		{Name: "locking.redis.password", Type: "secret", Default: `""`, Env: "HOSTLOOM_LOCKING__REDIS__PASSWORD"},
		{Name: "locking.redis.addrs", Type: "list", Default: "[]", Env: "HOSTLOOM_LOCKING__REDIS__ADDRS"},
		{Name: "locking.redis.tls.ca_file", Type: "string", Default: `""`, Env: "HOSTLOOM_LOCKING__REDIS__TLS__CA_FILE"},
		{Name: "leadership.roles.<role>.lease", Type: "duration", Default: "leadership.lease", Env: "HOSTLOOM_LEADERSHIP__ROLES__<ROLE>__LEASE"},
		{Name: "locking.max_lease", Type: "duration", Default: "5m", Env: "HOSTLOOM_LOCKING__MAX_LEASE"},
		{Name: "locking.max_hold", Type: "duration", Default: "1h", Env: "HOSTLOOM_LOCKING__MAX_HOLD"},
	} {
		found := false
		for _, k := range keys {
			if k == w {
				found = true
			}
		}
		if !found {
			t.Errorf("Keys() lacks %+v", w)
		}
	}
	// Every key Keys lists is one Load accepts from the environment.
	for _, k := range keys {
		if strings.Contains(k.Name, "<") {
			continue
		}
		if _, err := config.Load("", config.WithEnviron([]string{k.Env + "=%%bad%%"})); err != nil && strings.Contains(err.Error(), "unknown key") {
			t.Errorf("%s (%s) is listed but unknown to Load: %v", k.Name, k.Env, err)
		}
	}
}

// TestLoad_X1_F3_RedisLinkedByDefault: provider redis is the library
// module's own backend: a file choosing it, with its locking.redis keys,
// loads with no backend option, with the defaults of the keys it does
// not set; the password never shows in an error or in the loaded
// configuration printed, marshalled or logged. Passing the backend
// explicitly registers it once.
func TestLoad_X1_F3_RedisLinkedByDefault(t *testing.T) {
	const pw = "hunter2-linked-by-default"
	path := writeFile(t, "locking:\n  provider: redis\n  redis:\n    addrs: [\"127.0.0.1:6379\"]\n    password: "+pw+"\n")
	for _, opts := range [][]config.LoadOption{
		{config.WithEnviron(nil)},
		{config.WithEnviron(nil), config.WithBackends(redislockbuild.Backend{})},
	} {
		c, err := config.Load(path, opts...)
		if err != nil {
			t.Fatal(err)
		}
		want := config.RedisDefaults()
		want.Addrs, want.Password = []string{"127.0.0.1:6379"}, pw
		if c.Locking.Provider != config.ProviderRedis || !reflect.DeepEqual(redislockbuild.SectionOf(c.Locking), want) {
			t.Errorf("locking = %+v, redis %#v; want %#v", c.Locking, redislockbuild.SectionOf(c.Locking), want)
		}
		if got := fmt.Sprint(c.Locking.Providers()); got != "[memory redis disabled]" {
			t.Errorf("Providers() = %s, want redis once", got)
		}
		core, logs := observer.New(zapcore.DebugLevel)
		zap.New(core).Info("config", zap.Any("all", c), zap.Object("redis", redislockbuild.SectionOf(c.Locking)))
		js, _ := json.Marshal(c)
		out := fmt.Sprintf("%v %+v %#v %v %s", c, c, c, logs.All()[0].ContextMap(), js)
		if strings.Contains(out, pw) || !strings.Contains(out, "[redacted]") {
			t.Errorf("the loaded configuration shows the password, or no redaction:\n%s", out)
		}
	}
	bad := writeFile(t, "locking:\n  provider: redis\n  redis:\n    addrs: [\"nohost\"]\n    password: "+pw+"\n    db: -1\n")
	_, err := config.Load(bad, config.WithEnviron(nil))
	for _, want := range []string{
		`config: locking.redis.addrs: "nohost" is not host:port (file ` + bad + `)`,
		`config: locking.redis.db: -1 must not be negative (file ` + bad + `)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load error %v, want it to contain %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), pw) {
		t.Errorf("error shows the password: %v", err)
	}
}

// TestLoad_X1_UnknownProviderNamesLinked: a provider no linked backend
// serves is an error naming the key, the value, its source and the
// providers this program links, redis among them by default.
func TestLoad_X1_UnknownProviderNamesLinked(t *testing.T) {
	_, err := config.Load("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=etcd"}))
	want := `config: locking.provider: "etcd" is not one of memory, redis, disabled (the providers this program links) (env HOSTLOOM_LOCKING__PROVIDER)`
	if err == nil || err.Error() != want {
		t.Errorf("Load = %v, want %q", err, want)
	}
}
