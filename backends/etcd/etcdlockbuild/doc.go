// Package etcdlockbuild is provider etcd as a backend of the
// configuration (lockbuild.Backend): the section locking.etcd (Config:
// endpoints, username, password, prefix, dial_timeout, tls.*,
// expiry_quarantine), decoded and checked by config.Load like every other
// key, and the builder of the
// etcdlock provider over a client built from it or the app's own. Pass
// Backend{} to config.Load (lockbuild.LoadOption) and lockbuild.Build
// (lockbuild.WithBackends); in an fx app, add etcdlockfx.Module.
//
// The password never appears in logs, errors or descriptions. The
// provider itself is package core/locking/etcdlock.
package etcdlockbuild
