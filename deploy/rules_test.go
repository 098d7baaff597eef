package deploy_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.yaml.in/yaml/v3"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/locking"
	"github.com/hostloom/hostloom/core/locking/memlock"
	"github.com/hostloom/hostloom/core/scheduling"
)

// kind is an instrument's kind, as far as Prometheus names depend on it.
type kind int

const (
	counter   kind = iota + 1 // monotonic sum: _total
	gauge                     // gauge or up-down counter: no suffix
	histogram                 // _bucket, _sum, _count
)

// recorder is a MeterProvider that notes every instrument created through
// it (name, unit, kind) and measures nothing.
type recorder struct {
	noop.MeterProvider
	mu   sync.Mutex
	seen map[string]instrument
}

type instrument struct {
	unit string
	kind kind
}

func (r *recorder) Meter(string, ...metric.MeterOption) metric.Meter { return recMeter{r: r} }

func (r *recorder) add(name, unit string, k kind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[name] = instrument{unit: unit, kind: k}
}

type recMeter struct {
	noop.Meter
	r *recorder
}

func (m recMeter) Int64Counter(n string, o ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	m.r.add(n, metric.NewInt64CounterConfig(o...).Unit(), counter)
	return m.Meter.Int64Counter(n, o...)
}
func (m recMeter) Float64Counter(n string, o ...metric.Float64CounterOption) (metric.Float64Counter, error) {
	m.r.add(n, metric.NewFloat64CounterConfig(o...).Unit(), counter)
	return m.Meter.Float64Counter(n, o...)
}
func (m recMeter) Int64UpDownCounter(n string, o ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	m.r.add(n, metric.NewInt64UpDownCounterConfig(o...).Unit(), gauge)
	return m.Meter.Int64UpDownCounter(n, o...)
}
func (m recMeter) Float64UpDownCounter(n string, o ...metric.Float64UpDownCounterOption) (metric.Float64UpDownCounter, error) {
	m.r.add(n, metric.NewFloat64UpDownCounterConfig(o...).Unit(), gauge)
	return m.Meter.Float64UpDownCounter(n, o...)
}
func (m recMeter) Int64Histogram(n string, o ...metric.Int64HistogramOption) (metric.Int64Histogram, error) {
	m.r.add(n, metric.NewInt64HistogramConfig(o...).Unit(), histogram)
	return m.Meter.Int64Histogram(n, o...)
}
func (m recMeter) Float64Histogram(n string, o ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	m.r.add(n, metric.NewFloat64HistogramConfig(o...).Unit(), histogram)
	return m.Meter.Float64Histogram(n, o...)
}
func (m recMeter) Int64Gauge(n string, o ...metric.Int64GaugeOption) (metric.Int64Gauge, error) {
	m.r.add(n, metric.NewInt64GaugeConfig(o...).Unit(), gauge)
	return m.Meter.Int64Gauge(n, o...)
}
func (m recMeter) Float64Gauge(n string, o ...metric.Float64GaugeOption) (metric.Float64Gauge, error) {
	m.r.add(n, metric.NewFloat64GaugeConfig(o...).Unit(), gauge)
	return m.Meter.Float64Gauge(n, o...)
}
func (m recMeter) Int64ObservableCounter(n string, o ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	m.r.add(n, metric.NewInt64ObservableCounterConfig(o...).Unit(), counter)
	return m.Meter.Int64ObservableCounter(n, o...)
}
func (m recMeter) Float64ObservableCounter(n string, o ...metric.Float64ObservableCounterOption) (metric.Float64ObservableCounter, error) {
	m.r.add(n, metric.NewFloat64ObservableCounterConfig(o...).Unit(), counter)
	return m.Meter.Float64ObservableCounter(n, o...)
}
func (m recMeter) Int64ObservableUpDownCounter(n string, o ...metric.Int64ObservableUpDownCounterOption) (metric.Int64ObservableUpDownCounter, error) {
	m.r.add(n, metric.NewInt64ObservableUpDownCounterConfig(o...).Unit(), gauge)
	return m.Meter.Int64ObservableUpDownCounter(n, o...)
}
func (m recMeter) Float64ObservableUpDownCounter(n string, o ...metric.Float64ObservableUpDownCounterOption) (metric.Float64ObservableUpDownCounter, error) {
	m.r.add(n, metric.NewFloat64ObservableUpDownCounterConfig(o...).Unit(), gauge)
	return m.Meter.Float64ObservableUpDownCounter(n, o...)
}
func (m recMeter) Int64ObservableGauge(n string, o ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	m.r.add(n, metric.NewInt64ObservableGaugeConfig(o...).Unit(), gauge)
	return m.Meter.Int64ObservableGauge(n, o...)
}
func (m recMeter) Float64ObservableGauge(n string, o ...metric.Float64ObservableGaugeOption) (metric.Float64ObservableGauge, error) {
	m.r.add(n, metric.NewFloat64ObservableGaugeConfig(o...).Unit(), gauge)
	return m.Meter.Float64ObservableGauge(n, o...)
}

// unitSuffix is the suffix the OpenTelemetry Prometheus exporter appends
// for a unit: annotations in braces ({leader}) add none.
var unitSuffix = map[string]string{"": "", "s": "_seconds", "ms": "_milliseconds", "By": "_bytes", "1": "_ratio"}

// exported builds an elector, a leader channel and a scheduler with the
// recorder as their meter provider and returns the Prometheus names of
// every instrument they created, as the OpenTelemetry Prometheus exporter
// writes them: dots become underscores, the unit's suffix follows,
// counters end in _total, histograms are read as _bucket, _sum and _count.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	rec := &recorder{seen: map[string]instrument{}}
	lock, err := memlock.NewLock(locking.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	e, err := leadership.NewElector("billing", lock, leadership.DefaultOptions(), leadership.WithMeterProvider(rec))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := leadership.NewChannel[int]("events", e, leadership.DefaultChannelOptions(), leadership.WithMeterProvider(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	s, err := scheduling.New(e, scheduling.WithMeterProvider(rec), scheduling.WithSlotStore(lock))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(scheduling.Job{Name: "j", Schedule: scheduling.Every(time.Hour), Run: func(ctx context.Context) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for name, in := range rec.seen {
		suffix, ok := unitSuffix[in.unit]
		if !ok && !strings.HasPrefix(in.unit, "{") {
			t.Fatalf("instrument %s has unit %q: teach this test the exporter's suffix for it", name, in.unit)
		}
		base := strings.ReplaceAll(name, ".", "_") + suffix
		switch in.kind {
		case counter:
			out[base+"_total"] = true
		case gauge:
			out[base] = true
		case histogram:
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[base+s] = true
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d metric names derived: %v", len(out), out)
	}
	return out
}

var (
	strLit    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matcher   = regexp.MustCompile(`\{[^}]*\}`)
	rangeSel  = regexp.MustCompile(`\[[^\]]*\]`)
	grouping  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	ident     = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promWords = []string{
		"sum", "max", "min", "avg", "count", "rate", "increase", "irate", "histogram_quantile", "time",
		"and", "or", "unless", "bool", "offset", "abs", "clamp_min", "clamp_max", "label_values",
	}
)

// metricNames returns the metric names expr uses: its identifiers outside
// strings, label matchers, ranges and grouping clauses, less PromQL's own
// words. Grafana's $variables are left out.
func metricNames(expr string) []string {
	s := strLit.ReplaceAllString(expr, `""`)
	s = matcher.ReplaceAllString(s, "{}")
	s = rangeSel.ReplaceAllString(s, "[]")
	s = grouping.ReplaceAllString(s, "")
	s = regexp.MustCompile(`\boffset\s+\w+`).ReplaceAllString(s, "")
	s = regexp.MustCompile(`\$\w+`).ReplaceAllString(s, "")
	var out []string
	for _, id := range ident.FindAllString(s, -1) {
		if !slices.Contains(promWords, id) {
			out = append(out, id)
		}
	}
	return out
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestAlertRules_W4_NameOnlyExportedMetrics parses the Prometheus rule file
// strictly and checks that every rule has a name, an expression naming
// only metrics the library exports, a valid for, a severity and a summary,
// and that the alerts the operators' guide promises are there.
func TestAlertRules_W4_NameOnlyExportedMetrics(t *testing.T) {
	names := exported(t)
	raw, err := os.ReadFile("prometheus/hostloom-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	var rf ruleFile
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("hostloom-rules.yaml: %v", err)
	}
	var alerts []string
	for _, g := range rf.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: no name or no rules", g.Name)
		}
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if r.Alert == "" || strings.TrimSpace(r.Expr) == "" {
				t.Errorf("group %s: a rule without alert or expr: %+v", g.Name, r)
				continue
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", r.Alert, r.For, err)
				}
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: no severity label or no summary", r.Alert)
			}
			checkExpr(t, r.Alert, r.Expr, names)
			checkLabels(t, r.Alert+" annotations", r.Annotations["summary"]+" "+r.Annotations["description"])
		}
	}
	for _, want := range []string{"HostLoomRoleWithoutLeader", "HostLoomRoleWithTwoLeaders", "HostLoomLeadershipFlapping",
		"HostLoomBackendUnreachable", "HostLoomJobSlotsMissed", "HostLoomJobSlotsSkipped", "HostLoomJobPausedForLong"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s", want)
		}
	}
}

// TestGrafanaDashboard_W4_NamesOnlyExportedMetrics checks that the
// Grafana dashboard is JSON and that every panel's queries name only
// metrics the library exports.
func TestGrafanaDashboard_W4_NamesOnlyExportedMetrics(t *testing.T) {
	names := exported(t)
	raw, err := os.ReadFile("grafana/hostloom.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr   string `json:"expr"`
				Legend string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("hostloom.json: %v", err)
	}
	queries := 0
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries++
			checkExpr(t, "panel "+p.Title, tg.Expr, names)
			checkLabels(t, "panel "+p.Title+" legend", tg.Legend)
		}
	}
	if d.Title == "" || queries < 10 {
		t.Errorf("dashboard %q has %d queries", d.Title, queries)
	}
}

// labels are the label names the library's attributes become (dots to
// underscores), plus those Prometheus adds itself (instance, job) and the
// histogram bucket bound (le).
func labels() map[string]bool {
	out := map[string]bool{"instance": true, "job": true, "le": true}
	for _, a := range []string{
		leadership.AttrRole, leadership.AttrIdentity, leadership.AttrOutcome, leadership.AttrReason, leadership.AttrKind,
		leadership.AttrChannel, leadership.AttrOp, scheduling.AttrJob, scheduling.AttrAction,
	} {
		out[strings.ReplaceAll(a, ".", "_")] = true
	}
	return out
}

var (
	matcherLabel = regexp.MustCompile(`[{,]\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!=|!~|=)`)
	groupLabels  = regexp.MustCompile(`\b(?:by|without|on|ignoring)\s*\(([^)]*)\)`)
	templLabel   = regexp.MustCompile(`\$labels\.([A-Za-z_][A-Za-z0-9_]*)|\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)
)

// labelNames returns the label names text uses: in matchers, grouping
// clauses, alert templates ($labels.x) and legends ({{x}}).
func labelNames(text string) []string {
	var out []string
	for _, m := range matcherLabel.FindAllStringSubmatch(strLit.ReplaceAllString(text, `""`), -1) {
		out = append(out, m[1])
	}
	for _, m := range groupLabels.FindAllStringSubmatch(text, -1) {
		for l := range strings.SplitSeq(m[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
	}
	for _, m := range templLabel.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

func checkLabels(t *testing.T, where, text string) {
	t.Helper()
	known := labels()
	for _, l := range labelNames(text) {
		if !known[l] {
			t.Errorf("%s: label %s is not one the library's metrics carry (known: %v)", where, l, slices.Sorted(mapsKeys(known)))
		}
	}
}

func checkExpr(t *testing.T, where, expr string, names map[string]bool) {
	t.Helper()
	checkLabels(t, where, expr)
	used := metricNames(expr)
	if len(used) == 0 {
		t.Errorf("%s: expression names no metric: %s", where, expr)
	}
	for _, n := range used {
		if !names[n] {
			t.Errorf("%s: %s is not a metric the library exports (exported: %v)", where, n, slices.Sorted(mapsKeys(names)))
		}
	}
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// The extraction itself: a renamed metric is caught only if it is found.
func TestMetricNames_W4_Extraction(t *testing.T) {
	got := metricNames(`sum by (role) (rate(hostloom_a_total{reason="x y", role=~"$role"}[5m])) > 0 unless on (role, job) hostloom_b offset 5m`)
	if !slices.Equal(got, []string{"hostloom_a_total", "hostloom_b"}) {
		t.Errorf("metricNames = %v", got)
	}
	labels := labelNames(`sum by (le, a) (x{b="1,c=2", d=~"$role"}) unless on (e) y {{ $labels.f }} {{g}}`)
	if !slices.Equal(labels, []string{"b", "d", "le", "a", "e", "f", "g"}) {
		t.Errorf("labelNames = %v", labels)
	}
}
