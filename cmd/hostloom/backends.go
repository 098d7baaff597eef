package main

import (
	"github.com/hostloom/hostloom/backends/etcd/etcdlockbuild"
	"github.com/hostloom/hostloom/backends/postgres/pglockbuild"
	"github.com/hostloom/hostloom/backends/redis/redislockbuild"
	"github.com/hostloom/hostloom/config/lockbuild"
)

// backends are the lock backends the hostloom command links:
// locking.provider may name any of them (besides memory and disabled),
// and their sections (locking.<name>.*) load. Redis is the library
// module's own backend, linked without being listed; listing it keeps the
// command's list complete and registers it once. A backend of another
// module is added here, with its module in go.mod.
func backends() []lockbuild.Backend {
	return []lockbuild.Backend{
		redislockbuild.Backend{},
		pglockbuild.Backend{},
		etcdlockbuild.Backend{},
	}
}
