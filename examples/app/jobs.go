package main

import (
	"context"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/scheduling"
)

type invoicesParams struct {
	fx.In

	Billing leadership.Leadership `name:"billing"`
	Log     *zap.Logger
}

// newInvoicesJob is the billing leader's scheduled work: every 5 seconds,
// on the leader of billing only.
func newInvoicesJob(p invoicesParams) (scheduling.Job, error) {
	every, err := scheduling.Cron("@every 5s")
	if err != nil {
		return scheduling.Job{}, err
	}
	log := p.Log.With(zap.String("role", roleBilling), zap.String("job", "invoices"))
	return scheduling.Job{
		Name:     "invoices",
		Schedule: every,
		Timeout:  4 * time.Second, // a run never outlives the next slot
		Run: func(ctx context.Context) error {
			// Real work would honour ctx: it ends when this term does.
			log.Info("InvoicesRun", zap.Uint64("term", p.Billing.Term()))
			return ctx.Err()
		},
	}, nil
}
