package main

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/fx"
)

// metricsResult provides the OpenTelemetry meter provider every HostLoom
// component records to, and the Prometheus handler that exposes it.
type metricsResult struct {
	fx.Out

	MeterProvider metric.MeterProvider
	Handler       http.Handler `name:"metrics"`
}

// newMetrics builds a meter provider read by the OpenTelemetry Prometheus
// exporter into a private registry (plus Go runtime metrics).
func newMetrics(lc fx.Lifecycle) (metricsResult, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return metricsResult{}, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	lc.Append(fx.StopHook(func(ctx context.Context) error { return mp.Shutdown(ctx) }))
	return metricsResult{
		MeterProvider: mp,
		Handler:       promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
	}, nil
}
