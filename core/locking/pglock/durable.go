package pglock

// Durable implements locking.Durable: PostgreSQL commits every
// acquisition before answering, so a restart of the server keeps the
// leases it granted, and candidates need not hold back while their
// notification connection is down.
func (p *Provider) Durable() bool { return true }
