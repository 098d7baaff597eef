package config_test

import (
	"fmt"
	"time"

	"github.com/hostloom/hostloom/config"
)

func ExampleLoad() {
	c, err := config.Load("", // no file: defaults, then the environment
		config.WithYAML("embedded", []byte("locking:\n  provider: memory\nleadership:\n  lease: 20s\n  roles:\n    billing:\n      lease: 30s\n")),
		config.WithEnviron([]string{"HOSTLOOM_LEADERSHIP__RENEW_INTERVAL=6s"}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	billing := c.Leadership.For("billing")
	fmt.Println(c.Locking.Provider, c.Leadership.Lease, c.Leadership.RenewInterval, billing.Lease)
	// Output: memory 20s 6s 30s
}

func ExampleLoad_errors() {
	_, err := config.Load("", config.WithEnviron([]string{
		"HOSTLOOM_LEADERSHIP__LEASE=banana",
		"HOSTLOOM_LOCKING__PROVIDER=etcd",
	}))
	fmt.Println(err)
	// Output:
	// config: leadership.lease: invalid duration "banana" (use a unit, e.g. 15s, 500ms, 1m30s) (env HOSTLOOM_LEADERSHIP__LEASE)
	// config: locking.provider: "etcd" is not one of memory, redis, disabled (the providers this program links) (env HOSTLOOM_LOCKING__PROVIDER)
}

func ExampleSecret() {
	r := config.RedisConfig{Addrs: []string{"127.0.0.1:6379"}, Password: "hunter2"}
	fmt.Println(r)
	fmt.Println(r.Password.Value())
	// Output:
	// addrs=[127.0.0.1:6379] username="" password=[redacted] db=0 cluster=false tls=false
	// hunter2
}

func ExampleLeadershipConfig_CheckRoles() {
	c, err := config.Load("", config.WithEnviron([]string{
		"HOSTLOOM_LOCKING__PROVIDER=memory",
		"HOSTLOOM_LEADERSHIP__ROLES__BILING__LEASE=30s", // a typo for billing
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Leadership.CheckRoles("billing", "reports"))
	// Output:
	// config: leadership.roles.biling: names no declared role; declared: "billing", "reports" (env HOSTLOOM_LEADERSHIP__ROLES__BILING__LEASE)
}

func ExampleLoad_noProvider() {
	_, err := config.Load("", config.WithEnviron(nil))
	fmt.Println(err)
	// Output:
	// config: locking.provider: is not set: choose memory, redis, disabled (memory coordinates this process only) (not set in env HOSTLOOM_LOCKING__PROVIDER)
}

// A backend's section declares its keys once; String and its log object
// both redact the Secret.
func ExampleFields() {
	fs := config.Fields{
		{Key: "endpoints", Value: []string{"10.0.0.5:2379"}},
		{Key: "password", Value: config.Secret("hunter2")},
		{Key: "dial_timeout", Value: 5 * time.Second},
	}
	fmt.Println(fs)
	// Output: endpoints=[10.0.0.5:2379] password=[redacted] dial_timeout=5s
}
