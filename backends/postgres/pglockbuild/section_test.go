package pglockbuild_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hostloom/hostloom/backends/postgres/pglockbuild"
	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/lockbuild"
	"github.com/hostloom/hostloom/core/locking/pglock"
)

const testDSN = "postgres://svc:hunter2@db.internal:5432/app"

func TestPostgres_D1_LoadFromEnvWithDefaults(t *testing.T) {
	cfg, err := config.Load("", lockbuild.LoadOption(pglockbuild.Backend{}), config.WithEnviron([]string{
		"HOSTLOOM_LOCKING__PROVIDER=postgres",
		"HOSTLOOM_LOCKING__POSTGRES__DSN=" + testDSN,
	}))
	if err != nil {
		t.Fatal(err)
	}
	pg := pglockbuild.SectionOf(cfg.Locking)
	if cfg.Locking.Provider != pglockbuild.Name || pg.DSN.Value() != testDSN {
		t.Fatalf("provider %q dsn %q", cfg.Locking.Provider, pg.DSN.Value())
	}
	if pg.Table != pglock.DefaultTable || !pg.Notifications || pg.MaxConns != 0 || pg.Schema != "" || pg.ExternalSchema {
		t.Errorf("defaults: %v", pg)
	}
	if got := cfg.Source("locking.postgres.dsn"); got != "env HOSTLOOM_LOCKING__POSTGRES__DSN" {
		t.Errorf("source %q", got)
	}
}

func TestPostgres_D1_DSNNeverPrinted(t *testing.T) {
	pg := pglockbuild.Config{DSN: testDSN, Table: "t", Notifications: true}
	j, err := json.Marshal(pg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{pg.String(), fmt.Sprintf("%v %+v %#v %s", pg, pg, pg, pg), string(j)} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "svc:") {
			t.Errorf("DSN printed: %s", s)
		}
		if !strings.Contains(s, "[redacted]") {
			t.Errorf("no [redacted] in %s", s)
		}
	}
}

func TestPostgres_D1_BadValuesNameKeyValueAndSource(t *testing.T) {
	tests := []struct {
		env  string
		key  string
		want string
	}{
		{"HOSTLOOM_LOCKING__POSTGRES__TABLE=locks;drop", "locking.postgres.table", `"locks;drop": want letters`},
		{"HOSTLOOM_LOCKING__POSTGRES__TABLE=" + strings.Repeat("a", 51), "locking.postgres.table", "51 bytes, at most 50"},
		{"HOSTLOOM_LOCKING__POSTGRES__SCHEMA=1st", "locking.postgres.schema", `"1st": want letters`},
		{"HOSTLOOM_LOCKING__POSTGRES__MAX_CONNS=-1", "locking.postgres.max_conns", "-1 must not be negative"},
		{"HOSTLOOM_LOCKING__POSTGRES__MAX_CONNS=many", "locking.postgres.max_conns", `"many"`},
		{"HOSTLOOM_LOCKING__POSTGRES__NOTIFICATIONS=maybe", "locking.postgres.notifications", `"maybe"`},
		{"HOSTLOOM_LOCKING__POSTGRES__DSN=  ", "locking.postgres.dsn", "is blank"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			_, err := config.Load("", lockbuild.LoadOption(pglockbuild.Backend{}), config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=postgres", tt.env}))
			if err == nil {
				t.Fatal("Load accepted " + tt.env)
			}
			var fe *config.FieldError
			if !errors.As(err, &fe) || fe.Key != tt.key {
				t.Fatalf("error %v: want a FieldError for %s", err, tt.key)
			}
			name, _, _ := strings.Cut(tt.env, "=")
			for _, w := range []string{tt.key, tt.want, "env " + name} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestPostgres_D1_SectionCheckedOnlyForPostgres(t *testing.T) {
	_, err := config.Load("", lockbuild.LoadOption(pglockbuild.Backend{}), config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory", "HOSTLOOM_LOCKING__POSTGRES__MAX_CONNS=-1"}))
	if err != nil {
		t.Fatalf("provider memory: locking.postgres is not used, yet: %v", err)
	}
}
