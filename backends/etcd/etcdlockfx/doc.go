// Package etcdlockfx adds provider etcd to an fx app: with Module,
// configfx.Module accepts locking.provider: etcd and the locking.etcd
// keys, and lockingfx.Module builds the lock over etcdlock, on the
// graph's *clientv3.Client when it has one, else on a client built from
// locking.etcd.
package etcdlockfx
