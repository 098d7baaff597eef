package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

// TestApp_D4_PostgresLeadsAndServes boots the service over a real
// PostgreSQL with nothing but the provider and the DSN set: both roles
// lead over pglock, /leadership shows the holder and participants looked
// up in the database, /jobs the job's records, and the DSN's password is
// in no log line.
func TestApp_D4_PostgresLeadsAndServes(t *testing.T) {
	dsn := newPostgres(t)
	core, logs := observer.New(zapcore.DebugLevel)
	var got electors
	app := fx.New(graph(testSettings(
		"HOSTLOOM_LOCKING__PROVIDER=postgres",
		"HOSTLOOM_LOCKING__POSTGRES__DSN="+dsn,
	), zap.New(core)), fx.Populate(&got))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := app.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	for _, l := range []leadership.Leadership{got.Billing, got.Inventory} {
		if err := l.WaitForLeadership(ctx); err != nil {
			t.Fatalf("%s: %v", l.Role(), err)
		}
	}
	addrs := logs.FilterMessage("HTTPListening").All()
	if len(addrs) != 1 {
		t.Fatalf("HTTPListening logged %d times", len(addrs))
	}
	base := "http://" + addrs[0].ContextMap()["addr"].(string)
	var status []roleStatus
	getJSON(t, base+"/leadership", &status)
	if len(status) != 2 {
		t.Fatalf("/leadership = %+v", status)
	}
	for _, s := range status {
		if !s.IsLeader || s.Fence == 0 || s.Holder == nil || s.Holder.Identity != s.Identity || s.HolderError != "" ||
			s.ParticipantsError != "" || len(s.Participants) != 1 || !s.Participants[0].Leader || !s.Coordinated {
			t.Errorf("/leadership entry %+v", s)
		}
	}
	checkJobsPage(t, ctx, base, got)

	for _, e := range logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += " " + k + "=" + strings.TrimSpace(toText(v))
		}
		if strings.Contains(line, "example-secret") {
			t.Errorf("log line shows the DSN's password: %s", line)
		}
	}
	ex := logs.FilterMessage("HostLoomExample").All()
	if len(ex) != 1 || ex[0].ContextMap()["provider"] != "postgres" {
		t.Errorf("HostLoomExample lines: %v", ex)
	}
	if pg, ok := ex[0].ContextMap()["postgres"].(map[string]any); !ok || pg["dsn"] != "[redacted]" || pg["table"] != pglock.DefaultTable {
		t.Errorf("HostLoomExample postgres section: %v", ex[0].ContextMap()["postgres"])
	}
}

func toText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		var b strings.Builder
		for k, vv := range x {
			b.WriteString(k + ":" + toText(vv) + " ")
		}
		return b.String()
	case error:
		return x.Error()
	}
	return ""
}
