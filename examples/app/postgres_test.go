package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

// TestApp_D4_PostgresLeadsAndServes boots the service over a real
// PostgreSQL with nothing but the provider and the DSN set: both roles
// lead over pglock, /leadership shows the holder and participants looked
// up in the database, /jobs the job's records, and the DSN's password is
// in no log line.
func TestApp_D4_PostgresLeadsAndServes(t *testing.T) {
	dsn := newPostgres(t)
	ctx, base, got, logs := startLeading(t, zapcore.DebugLevel, 20*time.Second,
		"HOSTLOOM_LOCKING__PROVIDER=postgres",
		"HOSTLOOM_LOCKING__POSTGRES__DSN="+dsn,
	)
	checkBackendLeadership(t, base)
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

// TestApp_D3_InvoiceWrittenInTheTerm: over PostgreSQL the billing leader's
// invoices job writes its row in a transaction that checks the term
// (pglock.ProviderOf, Provider.Pool, CheckLeader): the row carries the
// leader's identity and the fence of its term; a context of no term
// writes nothing.
func TestApp_D3_InvoiceWrittenInTheTerm(t *testing.T) {
	dsn := newPostgres(t)
	var got struct {
		electors
		Lock *locking.DistributedLock
	}
	app := fx.New(graph(testSettings(
		"HOSTLOOM_LOCKING__PROVIDER=postgres",
		"HOSTLOOM_LOCKING__POSTGRES__DSN="+dsn,
	), zap.NewNop()), fx.Populate(&got.electors, &got.Lock))
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := app.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	if err := got.Billing.WaitForLeadership(ctx); err != nil {
		t.Fatal(err)
	}
	pg, ok := pglock.ProviderOf(got.Lock)
	if !ok {
		t.Fatal("ProviderOf: the app's lock is not over pglock")
	}
	var fence int64
	var identity string
	for {
		err := pg.Pool().QueryRow(ctx, "SELECT fence, identity FROM example_invoices ORDER BY issued DESC LIMIT 1").Scan(&fence, &identity)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no invoice written: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // the job runs every 5s
	}
	e := got.BillingElector
	if uint64(fence) != e.Fence() || identity != e.Identity() {
		t.Errorf("invoice (fence %d, %s), leader's term (fence %d, %s)", fence, identity, e.Fence(), e.Identity())
	}

	// A context of no term (not a run's, not a Token's) writes nothing:
	// the check fails closed.
	err := writeInvoice(ctx, pg, leadership.Describe(e).ProviderKey, "no-term")
	if !errors.Is(err, pglock.ErrNoFence) {
		t.Fatalf("write outside a term = %v, want pglock.ErrNoFence", err)
	}
	var n int
	if err := pg.Pool().QueryRow(ctx, "SELECT count(*) FROM example_invoices WHERE identity = 'no-term'").Scan(&n); err != nil || n != 0 {
		t.Errorf("rows written outside a term: %d, %v", n, err)
	}
}
