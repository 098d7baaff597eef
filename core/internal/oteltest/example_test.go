package oteltest_test

import (
	"fmt"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hostloom/hostloom/core/internal/oteltest"
)

// printer reports what the checks find.
type printer struct{}

func (printer) Helper()                           {}
func (printer) Errorf(format string, args ...any) { fmt.Printf(format+"\n", args...) }
func (printer) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// A test collects its meter provider's metrics and checks them; it passes
// its *testing.T where this example passes a printer.
func ExampleCheckMetrics() {
	rm := metricdata.ResourceMetrics{ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{
		{Name: "hostloom.leader.is_leader", Unit: "1", Data: metricdata.Gauge[int64]{}},
		{Name: "renewals", Unit: "1", Data: metricdata.Sum[int64]{}},
	}}}}
	seen := oteltest.CheckMetrics(printer{}, rm)
	fmt.Println(len(seen))
	// Output:
	// metric "renewals" unit "1": want a hostloom. name and a unit
	// 2
}
