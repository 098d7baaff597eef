package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hostloom/hostloom/config"
)

func TestCheckRoles_O4_UndeclaredOverridesListDeclaredRoles(t *testing.T) {
	path := writeFile(t, "locking:\n  provider: memory\nleadership:\n  roles:\n    billing:\n      lease: 20s\n    biling:\n      lease: 30s\n")
	c, err := config.Load(path, config.WithEnviron([]string{"HOSTLOOM_LEADERSHIP__ROLES__REPORTS__LEASE=40s"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Leadership.CheckRoles("billing", "reports", "billing"); err == nil {
		t.Fatal("CheckRoles accepted the override for biling")
	} else {
		want := `config: leadership.roles.biling: names no declared role; declared: "billing", "reports" (file ` + path + `)`
		if err.Error() != want {
			t.Fatalf("CheckRoles =\n%v\nwant\n%s", err, want)
		}
		var fe *config.FieldError
		if !errors.As(err, &fe) || fe.Key != "leadership.roles.biling" || fe.Source != "file "+path {
			t.Fatalf("not a *config.FieldError for the key and file: %#v", fe)
		}
	}
	err = c.Leadership.CheckRoles("billing")
	fe := fieldErrors(err)
	if len(fe) != 2 || fe[0].Key != "leadership.roles.biling" || fe[1].Key != "leadership.roles.reports" ||
		fe[1].Source != "env HOSTLOOM_LEADERSHIP__ROLES__REPORTS__LEASE" {
		t.Fatalf("CheckRoles(billing) = %v", err)
	}
	if err := c.Leadership.CheckRoles(); err == nil || !strings.Contains(err.Error(), "declared: none") {
		t.Errorf("CheckRoles() = %v, want every override refused and no roles listed", err)
	}
	if err := c.Leadership.CheckRoles("billing", "biling", "reports"); err != nil {
		t.Errorf("every override declared: %v", err)
	}
}

func TestCheckRoles_O4_EnvironmentLowerCaseHint(t *testing.T) {
	c, err := config.Load("", config.WithEnviron([]string{"HOSTLOOM_LOCKING__PROVIDER=memory", "HOSTLOOM_LEADERSHIP__ROLES__BILLING__LEASE=30s"}))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Leadership.CheckRoles("Billing")
	if err == nil || !strings.Contains(err.Error(), `leadership.roles.billing: names no declared role; declared: "Billing" (role names set through the environment are lower case: override "Billing" in YAML) (env HOSTLOOM_LEADERSHIP__ROLES__BILLING__LEASE)`) {
		t.Fatalf("CheckRoles = %v", err)
	}
	if err := config.Defaults().Leadership.CheckRoles("any"); err != nil {
		t.Errorf("no overrides: %v", err)
	}
}

func TestLoad_KeysMatchExactly(t *testing.T) {
	for _, doc := range []string{
		"locking:\n  provider: memory\nleadership:\n  Lease: 20s\n",
		"locking:\n  provider: memory\nleadership:\n  src: x\n",
		"locking:\n  provider: memory\nLocking:\n  namespace: x\n",
	} {
		_, err := config.Load(writeFile(t, doc), config.WithEnviron(nil))
		if fe := fieldErrors(err); len(fe) != 1 || fe[0].Reason != "unknown key" {
			t.Errorf("%q: %v, want one unknown key", doc, err)
		}
	}
}

func TestLoad_SourcesOfLayeredKeys(t *testing.T) {
	path := writeFile(t, "leadership:\n  lease: 20s\n  roles:\n    billing:\n      lease: 30s\n")
	c, err := config.Load(path,
		config.WithYAML("embedded", []byte("locking:\n  provider: memory\nleadership:\n  lease: 12s\n")),
		config.WithEnviron([]string{"HOSTLOOM_LEADERSHIP__ROLES__BILLING__RETRY_INTERVAL=1s"}))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"locking.provider":                         "yaml embedded",
		"leadership.lease":                         "file " + path,
		"leadership.roles.billing.retry_interval":  "env HOSTLOOM_LEADERSHIP__ROLES__BILLING__RETRY_INTERVAL",
		"leadership.roles.billing":                 "env HOSTLOOM_LEADERSHIP__ROLES__BILLING__RETRY_INTERVAL, file " + path,
		"leadership.renew_interval":                "default",
		"leadership.roles.billing.lock_key_format": "default",
		"scheduling":                               "default",
	} {
		if got := c.Source(key); got != want {
			t.Errorf("Source(%s) = %q, want %q", key, got, want)
		}
	}
}
