package redislockbuild_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostloom/hostloom/backends/redis/redislockbuild"
	"github.com/redis/go-redis/v9"
)

func TestRedis_NewClientByMode(t *testing.T) {
	tests := []struct {
		name string
		r    redislockbuild.Config
		want string
	}{
		{"standalone", redislockbuild.Config{Addrs: []string{"127.0.0.1:1"}}, "*redis.Client"},
		{"sentinel", redislockbuild.Config{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}, MasterName: "mymaster"}, "*redis.Client"},
		{"cluster", redislockbuild.Config{Addrs: []string{"127.0.0.1:1", "127.0.0.1:2"}, Cluster: true}, "*redis.ClusterClient"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.r
			r.DialTimeout, r.ReadTimeout, r.WriteTimeout = time.Second, time.Second, time.Second
			r.Password = "pw"
			c, err := r.NewClient()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := typeName(c); got != tt.want {
				t.Errorf("client type %s, want %s", got, tt.want)
			}
			o, err := r.UniversalOptions()
			if err != nil {
				t.Fatal(err)
			}
			if !o.ContextTimeoutEnabled || o.Password != "pw" || o.ReadTimeout != time.Second || o.IsClusterMode != r.Cluster || o.MasterName != r.MasterName {
				t.Errorf("options %+v", o)
			}
		})
	}
}

func typeName(c redis.UniversalClient) string {
	switch c.(type) {
	case *redis.ClusterClient:
		return "*redis.ClusterClient"
	case *redis.Client:
		return "*redis.Client"
	}
	return "other"
}

func TestRedis_TLSFilesNamedInErrors(t *testing.T) {
	r := redislockbuild.Defaults()
	r.Addrs = []string{"127.0.0.1:6379"}
	r.TLS = redislockbuild.TLSConfig{Enabled: true, CAFile: filepath.Join(t.TempDir(), "missing.pem")}
	if _, err := r.NewClient(); err == nil || !strings.Contains(err.Error(), "locking.redis.tls.ca_file") || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing CA file: %v", err)
	}
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.TLS.CAFile = notPEM
	if _, err := r.NewClient(); err == nil || !strings.Contains(err.Error(), "no PEM certificate found") {
		t.Errorf("bad CA file: %v", err)
	}
	r.TLS = redislockbuild.TLSConfig{Enabled: true, ServerName: "redis.internal"}
	o, err := r.UniversalOptions()
	if err != nil || o.TLSConfig == nil || o.TLSConfig.ServerName != "redis.internal" {
		t.Errorf("TLS options %+v, %v", o, err)
	}
	r.TLS.Enabled = false
	if o, err := r.UniversalOptions(); err != nil || o.TLSConfig != nil {
		t.Errorf("TLS off: %+v, %v", o, err)
	}
	r.Addrs = nil
	if _, err := r.NewClient(); err == nil || !strings.Contains(err.Error(), "locking.redis.addrs") {
		t.Errorf("no addresses: %v", err)
	}
}
