package etcdlockfx

import (
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/backends/etcd/etcdlockbuild"
	"github.com/hostloom/hostloom/lockingfx"
)

// Module adds provider etcd to the app (see the package documentation).
var Module = fx.Module("hostloom.etcdlock",
	fx.Provide(newBackend),
)

// Params are Module's dependencies.
type Params struct {
	fx.In

	// Client is the app's own etcd client, used instead of building one
	// from locking.etcd. The app keeps closing it. Optional.
	Client *clientv3.Client `optional:"true"`

	// Logger receives the description of the provider (password
	// redacted) and the start check's result. Optional.
	Logger *zap.Logger `optional:"true"`
}

func newBackend(p Params) lockingfx.BackendResult {
	return lockingfx.ProvideBackend(etcdlockbuild.Backend{Client: p.Client, Logger: p.Logger})
}
