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

	"github.com/hostloom/hostloom/config"
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

// keyErrors flattens a joined error into its *KeyError parts.
func keyErrors(err error) []*config.KeyError {
	var out []*config.KeyError
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, p := range j.Unwrap() {
				walk(p)
			}
			return
		}
		var ke *config.KeyError
		if errors.As(e, &ke) {
			out = append(out, ke)
		}
	}
	walk(err)
	return out
}

func TestLoad_DefaultsWithoutFileOrEnv(t *testing.T) {
	c, err := config.Load("", config.WithEnviron(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, config.Defaults()) {
		t.Fatalf("Load = %+v, want the defaults %+v", c, config.Defaults())
	}
	lo := locking.DefaultOptions()
	if got := c.Locking.Options(); got != lo {
		t.Errorf("Locking.Options() = %+v, want locking.DefaultOptions() %+v", got, lo)
	}
	if c.Locking.Provider != config.ProviderMemory {
		t.Errorf("default provider %q, want memory", c.Locking.Provider)
	}
}

const fullYAML = `
locking:
  enabled: true
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
  when_uncoordinated: lead
  lock_key_format: "election:eu:{role}"
  lock_key: ""
  identity: pod-1
  roles:
    billing:
      lease: 40s
      renew_interval: 10s
      retry_interval: 1s
      when_uncoordinated: follow
      lock_key_format: "x:{role}"
      lock_key: billing-exact
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
	c, err := config.Load(writeFile(t, fullYAML), config.WithEnviron(nil))
	if err != nil {
		t.Fatal(err)
	}
	d := func(s string) *time.Duration { v, _ := time.ParseDuration(s); return &v }
	str := func(s string) *string { return &s }
	follow := config.Follow
	want := &config.Config{
		Locking: config.Locking{
			Enabled: true, Provider: config.ProviderRedis, Namespace: "billing", UseHashTags: true,
			MaxKeyLength: 256, MaxLease: time.Minute, MaxHold: 30 * time.Minute,
			Redis: config.Redis{
				Addrs: []string{"a:6379", "b:6379"}, Username: "app", Password: "s3cret-pw", Cluster: true,
				DialTimeout: time.Second, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 600 * time.Millisecond,
				TLS: config.TLS{Enabled: true, ServerName: "redis.internal", CAFile: "/etc/ca.pem"},
			},
		},
		Leadership: config.Leadership{
			Lease: 20 * time.Second, RenewInterval: 6 * time.Second, RetryInterval: 3 * time.Second,
			WhenUncoordinated: config.Lead, LockKeyFormat: "election:eu:{role}", Identity: "pod-1",
			Roles: map[string]config.RoleOverrides{"billing": {
				Lease: d("40s"), RenewInterval: d("10s"), RetryInterval: d("1s"),
				WhenUncoordinated: &follow, LockKeyFormat: str("x:{role}"), LockKey: str("billing-exact"),
			}},
		},
		LeaderChannel: config.LeaderChannel{Capacity: 8, FullMode: config.FullDropOldest, DrainOnLoss: true, DropReportInterval: time.Minute},
		Scheduling:    config.Scheduling{Location: "Europe/Paris", MisfireWindow: 2 * time.Minute, SlotStore: false},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("Load =\n%#v\nwant\n%#v", c, want)
	}
	if got := c.Leadership.For("billing"); got.Lease != 40*time.Second || got.LockKey != "billing-exact" || got.WhenUncoordinated != config.Follow || got.Identity != "pod-1" {
		t.Errorf("For(billing) = %+v", got)
	}
	if got := c.Leadership.For("other"); got.Lease != 20*time.Second || got.LockKeyFormat != "election:eu:{role}" || got.Roles != nil {
		t.Errorf("For(other) = %+v", got)
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
	if !reflect.DeepEqual(c.Locking.Redis.Addrs, []string{"a:6379", "b:6379"}) {
		t.Errorf("addrs = %q, want [a:6379 b:6379]", c.Locking.Redis.Addrs)
	}
	if r := c.Leadership.For("billing"); r.RetryInterval != 750*time.Millisecond || r.Lease != 30*time.Second {
		t.Errorf("billing = %+v", r)
	}
	if c.LeaderChannel.FullMode != config.FullDropWrite {
		t.Errorf("full_mode = %q", c.LeaderChannel.FullMode)
	}
}

func TestLoad_WithYAMLLayersBeforeFile(t *testing.T) {
	path := writeFile(t, "leadership:\n  lease: 20s\n")
	c, err := config.Load(path,
		config.WithYAML("embedded", []byte("leadership:\n  lease: 12s\n  retry_interval: 1s\n")),
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
		want []string // substrings of one KeyError each, in order
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
			name: "key below a value",
			yaml: "leadership:\n  lease:\n    seconds: 3\n",
			want: []string{"leadership.lease.seconds: unknown key"},
		},
		{
			name: "unknown env key with a single underscore",
			env:  []string{"HOSTLOOM_LEADERSHIP_LEASE=20s"},
			want: []string{"config: leadership_lease: unknown key (env HOSTLOOM_LEADERSHIP_LEASE)"},
		},
		{
			name: "bad enum",
			yaml: "locking:\n  provider: etcd\n",
			want: []string{`locking.provider: "etcd" is not one of memory, redis, disabled`},
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
			want: []string{"config: leadership: renew_interval 6s exceeds half of lease 10s"},
		},
		{
			name: "role override checked with the role's key",
			yaml: "leadership:\n  roles:\n    billing:\n      lease: 4s\n",
			want: []string{"config: leadership.roles.billing: renew_interval 5s exceeds half of lease 4s"},
		},
		{
			name: "K2 format without role",
			env:  []string{"HOSTLOOM_LEADERSHIP__LOCK_KEY_FORMAT=leader"},
			want: []string{`config: leadership: lock_key_format "leader" must contain {role}`},
		},
		{
			name: "L2 hash tags without namespace",
			yaml: "locking:\n  use_hash_tags: true\n",
			want: []string{`config: locking: use_hash_tags requires a namespace, namespace is ""`},
		},
		{
			name: "several addresses without a mode",
			env:  []string{"HOSTLOOM_LOCKING__PROVIDER=redis", "HOSTLOOM_LOCKING__REDIS__ADDRS=a:1,b:2"},
			want: []string{"config: locking.redis.addrs: 2 addresses need cluster: true (seed nodes) or master_name (sentinels)"},
		},
		{
			name: "redis address without port",
			env:  []string{"HOSTLOOM_LOCKING__PROVIDER=redis", "HOSTLOOM_LOCKING__REDIS__ADDRS=localhost"},
			want: []string{`config: locking.redis.addrs: "localhost" is not host:port`},
		},
		{
			name: "redis cluster and sentinel",
			yaml: "locking:\n  provider: redis\n  redis:\n    addrs: [a:1]\n    cluster: true\n    master_name: mymaster\n",
			want: []string{`locking.redis.cluster: true and master_name "mymaster" select both Cluster and Sentinel`},
		},
		{
			name: "T3 cadence over the longest wait",
			yaml: "leadership:\n  roles:\n    slow:\n      retry_interval: 48h\n",
			want: []string{"config: leadership.roles.slow: retry_interval 48h0m0s exceeds the longest wait 24h0m0s"},
		},
		{
			name: "negative durations",
			yaml: "locking:\n  max_lease: -1s\nscheduling:\n  misfire_window: -1m\n",
			want: []string{"config: locking: max_lease -1s must be positive", "config: scheduling.misfire_window: -1m0s must not be negative"},
		},
		{
			name: "channel capacity",
			yaml: "leader_channel:\n  capacity: 0\n",
			want: []string{"config: leader_channel.capacity: 0 must be positive"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.yaml != "" {
				path = writeFile(t, tt.yaml)
			}
			c, err := config.Load(path, config.WithEnviron(tt.env))
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
		})
	}
}

func TestLoad_F2_AllProblemsAtOnce(t *testing.T) {
	path := writeFile(t, "leadership:\n  lease: soon\n  leese: 1s\nlocking:\n  provider: etcd\n")
	_, err := config.Load(path, config.WithEnviron([]string{
		"HOSTLOOM_LEADER_CHANNEL__CAPACITY=lots",
		"HOSTLOOM_SCHEDULING__NOPE=1",
	}))
	got := keyErrors(err)
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
	c, err := config.Load(missing, config.Optional(), config.WithEnviron(nil))
	if err != nil || !reflect.DeepEqual(c, config.Defaults()) {
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
	if c.Locking.Redis.Password.Value() != pw {
		t.Fatalf("Value() = %q, want the password", c.Locking.Redis.Password.Value())
	}
	core, logs := observer.New(zapcore.DebugLevel)
	log := zap.New(core)
	log.Info("config", zap.Object("redis", c.Locking.Redis), zap.Any("all", c), zap.Stringer("pw", c.Locking.Redis.Password))
	js, _ := json.Marshal(c)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%v %+v %#v %s %v %#v %q", c, c, c, c.Locking.Redis, *c, *c, c.Locking.Redis.Password)
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
	if got := c.Locking.Redis.String(); !strings.Contains(got, "password=[redacted]") || !strings.Contains(got, "addrs=[127.0.0.1:6379]") {
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
		{Name: "locking.provider", Type: "memory | redis | disabled", Default: "memory", Env: "HOSTLOOM_LOCKING__PROVIDER"},
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
