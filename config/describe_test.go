package config_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/config"
)

// TestFields_F3_SecretsNeverShow: a Secret is redacted in String and in
// the log object alike; Brief leaves a zero value out of String only.
func TestFields_F3_SecretsNeverShow(t *testing.T) {
	fs := config.Fields{
		{Key: "addrs", Value: []string{"h:1", "h:2"}},
		{Key: "user", Value: "svc"},
		{Key: "password", Value: config.Secret("hunter2")},
		{Key: "db", Value: 3},
		{Key: "timeout", Value: 2 * time.Second},
		{Key: "master", Value: "", Brief: true},
		{Key: "quarantine", Value: false, Brief: true},
	}
	if got, want := fs.String(), `addrs=[h:1 h:2] user="svc" password=[redacted] db=3 timeout=2s`; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	zap.New(core).Info("x", zap.Object("section", fs))
	got := logs.All()[0].ContextMap()["section"].(map[string]any)
	if got["password"] != "[redacted]" || got["master"] != "" || got["quarantine"] != false || fmt.Sprint(got["db"]) != "3" || len(got) != len(fs) {
		t.Errorf("log object = %v", got)
	}
	if s := fmt.Sprint(got) + fs.String(); strings.Contains(s, "hunter2") {
		t.Errorf("the secret shows: %s", s)
	}
}
