package main

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/pglock"
	"github.com/hostloom/hostloom/core/scheduling"
)

type invoicesParams struct {
	fx.In

	Billing        leadership.Leadership `name:"billing"`
	BillingElector *leadership.Elector   `name:"billing"`
	Lock           *locking.DistributedLock
	Log            *zap.Logger
}

// newInvoicesJob is the billing leader's scheduled work: every 5 seconds,
// on the leader of billing only. Over PostgreSQL (locking.provider:
// postgres) each run writes its invoice row fenced by the term: see
// writeInvoice.
func newInvoicesJob(p invoicesParams) (scheduling.Job, error) {
	every, err := scheduling.Cron("@every 5s")
	if err != nil {
		return scheduling.Job{}, err
	}
	log := p.Log.With(zap.String("role", roleBilling), zap.String("job", "invoices"))
	// The lease is in PostgreSQL: the provider, its pool and the role's
	// key in its table are what a fenced write needs. Found once here.
	pg, onPostgres := pglock.ProviderOf(p.Lock)
	return scheduling.Job{
		Name:     "invoices",
		Schedule: every,
		Timeout:  4 * time.Second, // a run never outlives the next slot
		Run: func(ctx context.Context) error {
			// ctx ends when this term does, and carries its fence.
			log.Info("InvoicesRun", zap.Uint64("term", p.Billing.Term()))
			if onPostgres {
				return writeInvoice(ctx, pg, leadership.Describe(p.BillingElector).ProviderKey, p.BillingElector.Identity())
			}
			return ctx.Err()
		},
	}, nil
}

// invoicesTable is where the example's billing leader writes.
const invoicesTable = `CREATE TABLE IF NOT EXISTS example_invoices (
	issued   timestamptz PRIMARY KEY DEFAULT now(),
	fence    bigint NOT NULL,
	identity text NOT NULL
)`

// writeInvoice writes one invoice row in a transaction that first checks,
// with CheckLeader, that the billing lease still carries the fence of the
// term ctx belongs to (a scheduler run's context does) and has not run
// out by the database's clock. The check share-locks the lease row until
// the transaction ends, so a successor cannot take the role before it
// commits: a deposed leader's row is never written. A term that has ended
// is an error matching fencing.ErrStale, and nothing is written.
func writeInvoice(ctx context.Context, pg *pglock.Provider, providerKey, identity string) error {
	pool := pg.Pool()
	if _, err := pool.Exec(ctx, invoicesTable); err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := pg.CheckLeader(ctx, tx, providerKey); err != nil {
			return err
		}
		fence, _ := leadership.FenceFrom(ctx)
		_, err := tx.Exec(ctx, "INSERT INTO example_invoices (fence, identity) VALUES ($1, $2)", int64(fence), identity)
		return err
	})
}
