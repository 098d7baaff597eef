package leadershipfx_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/leadershipfx"
	"github.com/hostloom/hostloom/lockingfx"
)

func get(t *testing.T, h http.Handler) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	return rec.Code, rec.Body.String()
}

func TestHealth_ReadyOnlyWhileStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h *leadershipfx.Health
		app := fxtest.New(t,
			env(),
			lockingfx.Module,
			leadershipfx.Module,
			leadershipfx.Role("billing"),
			leadershipfx.Role("reports"),
			fx.Populate(&h),
		)
		if code, body := get(t, h.Readyz()); code != http.StatusServiceUnavailable || !strings.Contains(body, "not started") {
			t.Fatalf("readyz before start: %d %q", code, body)
		}
		if code, _ := get(t, h.Livez()); code != http.StatusOK {
			t.Fatalf("livez before start: %d", code)
		}
		app.RequireStart()
		synctest.Wait()
		if code, body := get(t, h.Readyz()); code != http.StatusOK || body != "ok\n" {
			t.Fatalf("readyz while running: %d %q", code, body)
		}
		if code, body := get(t, h.Livez()); code != http.StatusOK || body != "ok\n" {
			t.Fatalf("livez while running: %d %q", code, body)
		}
		var roles []string
		for _, e := range h.Electors() {
			roles = append(roles, e.Role())
		}
		if strings.Join(roles, ",") != "billing,reports" {
			t.Fatalf("electors %v", roles)
		}
		app.RequireStop()
		if code, _ := get(t, h.Readyz()); code != http.StatusServiceUnavailable {
			t.Fatalf("readyz after stop: %d", code)
		}
	})
}

func TestHealth_WithoutFx(t *testing.T) {
	h := leadershipfx.NewHealth(leadershipfx.HealthParams{})
	if err := h.Ready(); err != nil {
		t.Fatalf("Ready without a lifecycle or electors: %v", err)
	}
}

func TestZapEventLogger(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	fxtest.New(t,
		fx.Supply(zap.New(core)),
		leadershipfx.ZapEventLogger(),
		fx.Invoke(func() {}),
	).RequireStart().RequireStop()
	if logs.FilterLoggerName("fx").Len() == 0 {
		t.Fatal("fx events did not reach the zap logger")
	}
	for _, e := range logs.FilterLoggerName("fx").All() {
		if e.Level != zapcore.DebugLevel {
			t.Errorf("routine fx event %q at %v, want debug", e.Message, e.Level)
		}
	}
}
