package leadership_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership"
	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
)

const chanDropMetric = "hostloom.leadership.channel.dropped"
const chanScope = "github.com/hostloom/hostloom/core/leadership"
const chanSummaryMsg = "LeaderChannelDropped"

// chanTelemetry captures a channel's metrics and logs.
type chanTelemetry struct {
	reader *sdkmetric.ManualReader
	logs   *observer.ObservedLogs
	opts   []leadership.Option
}

func newChanTelemetry() *chanTelemetry {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	core, logs := observer.New(zapcore.DebugLevel)
	return &chanTelemetry{
		reader: reader,
		logs:   logs,
		opts:   []leadership.Option{leadership.WithMeterProvider(mp), leadership.WithLogger(zap.New(core))},
	}
}

// drops returns the drop counter's value per reason for channel name, and
// fails the test on any data point with other attributes.
func (tel *chanTelemetry) drops(t *testing.T, name string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect: %v", err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != chanDropMetric {
				continue
			}
			if sm.Scope.Name != chanScope {
				t.Errorf("scope = %q, want %q", sm.Scope.Name, chanScope)
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				t.Fatalf("%s data = %T, want Sum[int64]", m.Name, m.Data)
			}
			if !sum.IsMonotonic {
				t.Errorf("%s is not monotonic", m.Name)
			}
			for _, dp := range sum.DataPoints {
				if dp.Attributes.Len() != 2 {
					t.Errorf("attributes = %v, want reason and channel", dp.Attributes.ToSlice())
				}
				ch, _ := dp.Attributes.Value("hostloom.channel")
				if ch.AsString() != name {
					continue
				}
				reason, _ := dp.Attributes.Value("hostloom.reason")
				got[reason.AsString()] += dp.Value
			}
		}
	}
	return got
}

func newChan[T any](t *testing.T, l leadership.Leadership, o leadership.ChannelOptions, opts ...leadership.Option) *leadership.Channel[T] {
	t.Helper()
	c, err := leadership.NewChannel[T]("test", l, o, opts...)
	if err != nil {
		t.Fatalf("NewChannel: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func chanOpts(capacity int, mode leadership.FullMode) leadership.ChannelOptions {
	o := leadership.DefaultChannelOptions()
	o.Capacity = capacity
	o.FullMode = mode
	return o
}

// drainNow reads every buffered item without waiting.
func drainNow[T any](c *leadership.Channel[T]) []T {
	var out []T
	for {
		v, ok := c.TryRead()
		if !ok {
			return out
		}
		out = append(out, v)
	}
}

func TestDefaultChannelOptions(t *testing.T) {
	o := leadership.DefaultChannelOptions()
	want := leadership.ChannelOptions{Capacity: 1024, FullMode: leadership.Wait, DrainOnLoss: false, DropReportInterval: time.Minute}
	if o != want {
		t.Fatalf("DefaultChannelOptions() = %+v, want %+v", o, want)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
}

func TestNewChannel_BadInput(t *testing.T) {
	fake := leadershiptest.NewFake("r")
	tests := []struct {
		name  string
		cname string
		l     leadership.Leadership
		edit  func(*leadership.ChannelOptions)
		want  []string // substrings naming the field and value
	}{
		{"zero capacity", "c", fake, func(o *leadership.ChannelOptions) { o.Capacity = 0 }, []string{"capacity 0"}},
		{"negative capacity", "c", fake, func(o *leadership.ChannelOptions) { o.Capacity = -3 }, []string{"capacity -3"}},
		{"zero full mode", "c", fake, func(o *leadership.ChannelOptions) { o.FullMode = 0 }, []string{"FullMode 0"}},
		{"unknown full mode", "c", fake, func(o *leadership.ChannelOptions) { o.FullMode = 9 }, []string{"FullMode 9"}},
		{"negative interval", "c", fake, func(o *leadership.ChannelOptions) { o.DropReportInterval = -time.Second }, []string{"DropReportInterval -1s"}},
		{"nil leadership", "c", nil, func(*leadership.ChannelOptions) {}, []string{"Leadership <nil>"}},
		{"empty name", "", fake, func(*leadership.ChannelOptions) {}, []string{`name ""`}},
		{"all at once", "", nil, func(o *leadership.ChannelOptions) { *o = leadership.ChannelOptions{DropReportInterval: -1} },
			[]string{`name ""`, "Leadership <nil>", "capacity 0", "FullMode 0", "DropReportInterval -1ns"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := leadership.DefaultChannelOptions()
			tt.edit(&o)
			c, err := leadership.NewChannel[int](tt.cname, tt.l, o)
			if err == nil {
				c.Close()
				t.Fatal("NewChannel succeeded, want an error")
			}
			if c != nil {
				t.Errorf("NewChannel returned a channel with the error")
			}
			if !errors.Is(err, leadership.ErrInvalidChannelOptions) {
				t.Errorf("errors.Is(%v, ErrInvalidChannelOptions) = false", err)
			}
			optionsBad := slices.ContainsFunc(tt.want, func(w string) bool {
				return !strings.HasPrefix(w, "name") && !strings.HasPrefix(w, "Leadership")
			})
			verr := o.Validate()
			if (verr != nil) != optionsBad {
				t.Errorf("Validate() = %v, want an error: %v", verr, optionsBad)
			}
			if verr != nil && !errors.Is(verr, leadership.ErrInvalidChannelOptions) {
				t.Errorf("Validate() = %v, not ErrInvalidChannelOptions", verr)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestFullMode_Names(t *testing.T) {
	modes := map[leadership.FullMode]string{
		leadership.Wait:       "wait",
		leadership.DropWrite:  "drop_write",
		leadership.DropNewest: "drop_newest",
		leadership.DropOldest: "drop_oldest",
		0:                     "unknown",
		5:                     "unknown",
	}
	for m, want := range modes {
		if got := m.String(); got != want {
			t.Errorf("FullMode(%d).String() = %q, want %q", int(m), got, want)
		}
	}
	if leadership.Wait != 1 {
		t.Errorf("Wait = %d, want 1 (iota + 1)", leadership.Wait)
	}
	for _, in := range []string{"drop_oldest", "DropOldest", "drop-oldest", " DROP_OLDEST "} {
		m, err := leadership.ParseFullMode(in)
		if err != nil || m != leadership.DropOldest {
			t.Errorf("ParseFullMode(%q) = %v, %v; want DropOldest", in, m, err)
		}
	}
	for m := leadership.Wait; m <= leadership.DropOldest; m++ {
		b, err := m.MarshalText()
		if err != nil {
			t.Fatalf("MarshalText(%v): %v", m, err)
		}
		var back leadership.FullMode
		if err := back.UnmarshalText(b); err != nil || back != m {
			t.Errorf("round trip of %v = %v, %v", m, back, err)
		}
	}
	if _, err := leadership.ParseFullMode("block"); err == nil || !strings.Contains(err.Error(), `"block"`) {
		t.Errorf(`ParseFullMode("block") error = %v, want one naming "block"`, err)
	}
	if _, err := leadership.FullMode(7).MarshalText(); err == nil {
		t.Error("MarshalText of FullMode(7) succeeded")
	}
}

// A leader's items reach the reader in order; a follower's writes succeed
// and are discarded.
func TestChannel_C1_FollowerWritesAcceptedAndDiscarded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("r")
		c := newChan[int](t, fake, chanOpts(4, leadership.Wait))
		ctx := context.Background()

		// Follower: accepted, not delivered.
		if err := c.Write(ctx, 1); err != nil {
			t.Fatalf("follower Write = %v, want nil", err)
		}
		if !c.TryWrite(2) {
			t.Fatal("follower TryWrite = false, want true")
		}
		if c.Len() != 0 {
			t.Fatalf("Len after follower writes = %d, want 0", c.Len())
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		if v, err := c.Read(rctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Read on a follower's channel = %v, %v; want DeadlineExceeded", v, err)
		}
		cancel()

		// Leader: delivered, in order.
		fake.SetLeader(true)
		for i := 10; i < 13; i++ {
			if err := c.Write(ctx, i); err != nil {
				t.Fatalf("leader Write(%d) = %v", i, err)
			}
		}
		for want := 10; want < 13; want++ {
			if v, err := c.Read(ctx); err != nil || v != want {
				t.Fatalf("Read = %d, %v; want %d", v, err, want)
			}
		}
	})
}

// A channel built while the Leadership already leads admits at once.
func TestChannel_C1_CreatedWhileLeading(t *testing.T) {
	fake := leadershiptest.NewFake("r")
	fake.SetLeader(true)
	c := newChan[string](t, fake, chanOpts(2, leadership.Wait))
	if !c.TryWrite("a") {
		t.Fatal("TryWrite = false")
	}
	if v, ok := c.TryRead(); !ok || v != "a" {
		t.Fatalf("TryRead = %q, %v; want a", v, ok)
	}
}

// laggingLeadership reports a loss through IsLeader before it is notified
// through OnChange, as an elector may when its notifications run later
// than its state changes.
type laggingLeadership struct {
	*leadershiptest.Fake
	lost atomic.Bool
}

func (l *laggingLeadership) IsLeader() bool { return !l.lost.Load() && l.Fake.IsLeader() }

// Admission needs the Leadership's IsLeader at the time of the write, not
// only the last notification.
func TestChannel_C1_IsLeaderConsultedOnEveryWrite(t *testing.T) {
	l := &laggingLeadership{Fake: leadershiptest.NewFake("r")}
	l.SetLeader(true)
	tel := newChanTelemetry()
	c := newChan[int](t, l, chanOpts(2, leadership.Wait), tel.opts...)
	l.lost.Store(true)
	if !c.TryWrite(1) {
		t.Fatal("TryWrite = false")
	}
	if c.Len() != 0 {
		t.Fatalf("Len = %d, want 0: a write after the loss was enqueued", c.Len())
	}
	if got := tel.drops(t, "test")["follower"]; got != 1 {
		t.Fatalf("follower drops = %d, want 1", got)
	}
}

func TestChannel_C2_DropsCountedByReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("r")
		tel := newChanTelemetry()
		o := chanOpts(2, leadership.DropWrite)
		o.DrainOnLoss = true
		c := newChan[int](t, fake, o, tel.opts...)

		for i := range 3 {
			c.TryWrite(i) // follower ×3
		}
		fake.SetLeader(true)
		for i := range 5 {
			c.TryWrite(i) // 2 enqueued, 3 dropped as full
		}
		fake.SetLeader(false) // 2 discarded as loss

		got := tel.drops(t, "test")
		want := map[string]int64{"follower": 3, "full": 3, "loss": 2}
		for r, n := range want {
			if got[r] != n {
				t.Errorf("drops[%s] = %d, want %d (all: %v)", r, got[r], n, got)
			}
		}
	})
}

func TestChannel_C2_ChannelAttributeIsTheName(t *testing.T) {
	fake := leadershiptest.NewFake("r")
	tel := newChanTelemetry()
	a, err := leadership.NewChannel[int]("orders", fake, chanOpts(1, leadership.Wait), tel.opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := leadership.NewChannel[int]("invoices", fake, chanOpts(1, leadership.Wait), tel.opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a.TryWrite(1)
	b.TryWrite(1)
	b.TryWrite(2)
	if got := tel.drops(t, "orders")["follower"]; got != 1 {
		t.Errorf("orders follower drops = %d, want 1", got)
	}
	if got := tel.drops(t, "invoices")["follower"]; got != 2 {
		t.Errorf("invoices follower drops = %d, want 2", got)
	}
	if a.Name() != "orders" || a.Cap() != 1 {
		t.Errorf("Name, Cap = %q, %d", a.Name(), a.Cap())
	}
}

// summaries takes every logged entry and returns the drop summaries.
func summaries(logs *observer.ObservedLogs) []observer.LoggedEntry {
	var out []observer.LoggedEntry
	for _, e := range logs.TakeAll() {
		if e.Message == chanSummaryMsg {
			out = append(out, e)
		}
	}
	return out
}

func TestChannel_C3_SummaryAtMostOncePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("billing")
		tel := newChanTelemetry()
		o := chanOpts(4, leadership.Wait)
		o.DropReportInterval = 10 * time.Second
		c := newChan[int](t, fake, o, tel.opts...)
		start := time.Now()

		for i := range 3 {
			c.TryWrite(i)
		}
		time.Sleep(9 * time.Second)
		c.TryWrite(3)
		if s := summaries(tel.logs); len(s) != 0 {
			t.Fatalf("%d summaries before the interval elapsed, want 0", len(s))
		}

		time.Sleep(time.Second) // 10s since construction
		c.TryWrite(4)
		s := summaries(tel.logs)
		if len(s) != 1 {
			t.Fatalf("%d summaries at the interval, want 1", len(s))
		}
		f := s[0].ContextMap()
		if f["follower"] != int64(5) || f["full"] != int64(0) || f["loss"] != int64(0) || f["tail"] != false {
			t.Errorf("summary fields = %v, want follower=5 full=0 loss=0 tail=false", f)
		}
		if f["channel"] != "test" || f["role"] != "billing" {
			t.Errorf("summary channel, role = %v, %v", f["channel"], f["role"])
		}
		if since, _ := f["since"].(time.Time); !since.Equal(start) {
			t.Errorf("since = %v, want %v (the first unsummarised drop)", f["since"], start)
		}
		if s[0].Level != zapcore.InfoLevel {
			t.Errorf("follower-only summary at %v, want info", s[0].Level)
		}

		// Within the next interval: counted, not logged.
		time.Sleep(5 * time.Second)
		c.TryWrite(5)
		c.TryWrite(6)
		if s := summaries(tel.logs); len(s) != 0 {
			t.Fatalf("%d summaries within the interval, want 0: %v", len(s), s)
		}
		tailStart := time.Now()

		// Becoming leader writes the tail at once.
		fake.SetLeader(true)
		s = summaries(tel.logs)
		if len(s) != 1 {
			t.Fatalf("%d summaries on becoming leader, want 1 (the tail)", len(s))
		}
		f = s[0].ContextMap()
		if f["follower"] != int64(2) || f["tail"] != true {
			t.Errorf("tail fields = %v, want follower=2 tail=true", f)
		}
		if since, _ := f["since"].(time.Time); !since.Equal(tailStart) {
			t.Errorf("tail since = %v, want %v", f["since"], tailStart)
		}

		// Nothing pending: the next acquisition logs nothing.
		fake.SetLeader(false)
		fake.SetLeader(true)
		if s := summaries(tel.logs); len(s) != 0 {
			t.Fatalf("%d summaries without drops, want 0", len(s))
		}
	})
}

func TestChannel_C3_LeaderDropsAtWarnAndTailAtClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("r")
		fake.SetLeader(true)
		tel := newChanTelemetry()
		o := chanOpts(1, leadership.DropOldest)
		o.DropReportInterval = time.Hour
		c, err := leadership.NewChannel[int]("test", fake, o, tel.opts...)
		if err != nil {
			t.Fatal(err)
		}
		c.TryWrite(1)
		c.TryWrite(2) // drops 1 as full
		c.TryWrite(3) // drops 2 as full
		if s := summaries(tel.logs); len(s) != 0 {
			t.Fatalf("%d summaries within the interval, want 0: %v", len(s), s)
		}
		c.Close()
		s := summaries(tel.logs)
		if len(s) != 1 {
			t.Fatalf("%d summaries at Close, want 1", len(s))
		}
		if s[0].Level != zapcore.WarnLevel {
			t.Errorf("full-drop summary at %v, want warn", s[0].Level)
		}
		if f := s[0].ContextMap(); f["full"] != int64(2) || f["tail"] != true {
			t.Errorf("fields = %v, want full=2 tail=true", f)
		}
	})
}

func TestChannel_C3_ZeroIntervalLogsEveryDrop(t *testing.T) {
	fake := leadershiptest.NewFake("r")
	tel := newChanTelemetry()
	o := chanOpts(1, leadership.Wait)
	o.DropReportInterval = 0
	c := newChan[int](t, fake, o, tel.opts...)
	for i := range 3 {
		c.TryWrite(i)
	}
	if s := summaries(tel.logs); len(s) != 3 {
		t.Fatalf("%d summaries, want 3", len(s))
	}
}

// Losing leadership wakes producers blocked on capacity; they discard as
// followers, and the old buffer stays (C6 without DrainOnLoss).
func TestChannel_C4_LossWakesBlockedWriters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("r")
		fake.SetLeader(true)
		tel := newChanTelemetry()
		c := newChan[int](t, fake, chanOpts(1, leadership.Wait), tel.opts...)
		ctx := context.Background()
		if err := c.Write(ctx, 0); err != nil {
			t.Fatal(err)
		}

		const writers = 3
		errs := make(chan error, writers)
		for i := range writers {
			go func() { errs <- c.Write(ctx, i+1) }()
		}
		synctest.Wait()
		if len(errs) != 0 {
			t.Fatalf("%d writers returned before the loss, want all blocked", len(errs))
		}
		waiting := make(chan bool, 1)
		go func() {
			ok, err := c.WaitToWrite(ctx)
			waiting <- ok && err == nil
		}()
		synctest.Wait()
		if len(waiting) != 0 {
			t.Fatal("WaitToWrite returned on a full leader's channel")
		}

		fake.SetLeader(false)
		synctest.Wait()
		for range writers {
			if err := <-errs; err != nil {
				t.Fatalf("woken writer returned %v, want nil (discarded as follower)", err)
			}
		}
		if !<-waiting {
			t.Fatal("WaitToWrite after the loss = false or error, want true")
		}
		if got := tel.drops(t, "test")["follower"]; got != writers {
			t.Errorf("follower drops = %d, want %d", got, writers)
		}
		if got := drainNow(c); !slices.Equal(got, []int{0}) {
			t.Errorf("buffer after loss = %v, want [0]", got)
		}
	})
}

// WaitToWrite succeeds at once for a follower even while the buffer left
// from its last term is full.
func TestChannel_C4_WaitToWriteFollowerWithFullBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("r")
		fake.SetLeader(true)
		c := newChan[int](t, fake, chanOpts(2, leadership.Wait))
		c.TryWrite(1)
		c.TryWrite(2)
		fake.SetLeader(false)
		if c.Len() != 2 {
			t.Fatalf("Len = %d, want 2", c.Len())
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // must not need to wait at all
		if ok, err := c.WaitToWrite(ctx); !ok || err != nil {
			t.Fatalf("follower WaitToWrite = %v, %v; want true, nil", ok, err)
		}
		if err := c.Write(ctx, 3); err != nil {
			t.Fatalf("follower Write = %v, want nil", err)
		}
	})
}

func TestChannel_C4_WaitToWriteLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("r")
		fake.SetLeader(true)
		c := newChan[int](t, fake, chanOpts(1, leadership.Wait))
		ctx := context.Background()
		if ok, err := c.WaitToWrite(ctx); !ok || err != nil {
			t.Fatalf("WaitToWrite with room = %v, %v", ok, err)
		}
		c.TryWrite(1)
		if c.TryWrite(2) {
			t.Fatal("TryWrite on a full Wait channel = true, want false")
		}

		tctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if ok, err := c.WaitToWrite(tctx); ok || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitToWrite on full = %v, %v; want false, DeadlineExceeded", ok, err)
		}
		if err := c.Write(tctx, 2); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Write on full with ended ctx = %v, want DeadlineExceeded", err)
		}

		res := make(chan bool, 1)
		go func() {
			ok, err := c.WaitToWrite(ctx)
			res <- ok && err == nil
		}()
		synctest.Wait()
		if len(res) != 0 {
			t.Fatal("WaitToWrite returned while full")
		}
		if v, _ := c.Read(ctx); v != 1 {
			t.Fatalf("Read = %d, want 1", v)
		}
		synctest.Wait()
		if len(res) != 1 || !<-res {
			t.Fatal("WaitToWrite did not report room after a read")
		}

		// Dropping modes never wait.
		d := newChan[int](t, fake, chanOpts(1, leadership.DropOldest))
		d.TryWrite(1)
		if ok, err := d.WaitToWrite(ctx); !ok || err != nil {
			t.Fatalf("DropOldest WaitToWrite on full = %v, %v; want true", ok, err)
		}
	})
}

// A write woken by room rechecks the role before enqueueing: here the
// loss is visible only through IsLeader when the room appears.
func TestChannel_C5_WaitedWriteRechecksRole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &laggingLeadership{Fake: leadershiptest.NewFake("r")}
		l.SetLeader(true)
		tel := newChanTelemetry()
		c := newChan[int](t, l, chanOpts(2, leadership.Wait), tel.opts...)
		ctx := context.Background()
		c.TryWrite(1)
		c.TryWrite(2)

		done := make(chan error, 1)
		go func() { done <- c.Write(ctx, 3) }()
		synctest.Wait()
		if len(done) != 0 {
			t.Fatal("writer did not block on a full buffer")
		}

		l.lost.Store(true) // no notification: the role changes silently
		if v, err := c.Read(ctx); err != nil || v != 1 {
			t.Fatalf("Read = %d, %v", v, err)
		}
		synctest.Wait()
		if err := <-done; err != nil {
			t.Fatalf("Write = %v, want nil (discarded)", err)
		}
		if got := drainNow(c); !slices.Equal(got, []int{2}) {
			t.Fatalf("buffer = %v, want [2]: the waited write was enqueued without a role check", got)
		}
		if got := tel.drops(t, "test")["follower"]; got != 1 {
			t.Errorf("follower drops = %d, want 1", got)
		}
	})
}

// A write that waited and then finds the role regained in a new term
// enqueues in that term.
func TestChannel_C5_WaitedWriteEnqueuesWhenStillLeading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("r")
		fake.SetLeader(true)
		c := newChan[int](t, fake, chanOpts(1, leadership.Wait))
		ctx := context.Background()
		c.TryWrite(1)
		done := make(chan error, 1)
		go func() { done <- c.Write(ctx, 2) }()
		synctest.Wait()
		if _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := drainNow(c); !slices.Equal(got, []int{2}) {
			t.Fatalf("buffer = %v, want [2]", got)
		}
	})
}

func TestChannel_C6_AcceptedItemsReadableAfterLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("r")
		fake.SetLeader(true)
		tel := newChanTelemetry()
		c := newChan[int](t, fake, chanOpts(4, leadership.Wait), tel.opts...)
		for i := range 3 {
			c.TryWrite(i)
		}
		fake.SetLeader(false)
		c.TryWrite(99) // follower: discarded
		ctx := context.Background()
		for want := range 3 {
			if v, err := c.Read(ctx); err != nil || v != want {
				t.Fatalf("Read after loss = %d, %v; want %d", v, err, want)
			}
		}
		if got := tel.drops(t, "test"); got["loss"] != 0 || got["follower"] != 1 {
			t.Errorf("drops = %v, want follower=1, no loss", got)
		}
	})
}

func TestChannel_C6_DrainOnLossDiscardsCountedAndLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("r")
		fake.SetLeader(true)
		tel := newChanTelemetry()
		o := chanOpts(4, leadership.Wait)
		o.DrainOnLoss = true
		o.DropReportInterval = time.Second
		c := newChan[int](t, fake, o, tel.opts...)
		for i := range 3 {
			c.TryWrite(i)
		}
		time.Sleep(time.Second)
		fake.SetLeader(false)
		if c.Len() != 0 {
			t.Fatalf("Len after loss = %d, want 0", c.Len())
		}
		if v, ok := c.TryRead(); ok {
			t.Fatalf("TryRead after drain = %d, want nothing", v)
		}
		if got := tel.drops(t, "test")["loss"]; got != 3 {
			t.Errorf("loss drops = %d, want 3", got)
		}
		s := summaries(tel.logs)
		if len(s) != 1 {
			t.Fatalf("%d summaries, want 1", len(s))
		}
		if f := s[0].ContextMap(); f["loss"] != int64(3) || s[0].Level != zapcore.WarnLevel {
			t.Errorf("summary = %v at %v, want loss=3 at warn", f, s[0].Level)
		}

		// The next term starts empty and works.
		fake.SetLeader(true)
		c.TryWrite(7)
		if got := drainNow(c); !slices.Equal(got, []int{7}) {
			t.Errorf("buffer in the next term = %v, want [7]", got)
		}
	})
}

func TestChannel_FullModes(t *testing.T) {
	tests := []struct {
		mode     leadership.FullMode
		accepted []bool // TryWrite results for 1..5
		buffer   []int
		full     int64
	}{
		{leadership.Wait, []bool{true, true, true, false, false}, []int{1, 2, 3}, 0},
		{leadership.DropWrite, []bool{true, true, true, true, true}, []int{1, 2, 3}, 2},
		{leadership.DropNewest, []bool{true, true, true, true, true}, []int{1, 2, 5}, 2},
		{leadership.DropOldest, []bool{true, true, true, true, true}, []int{3, 4, 5}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			fake := leadershiptest.NewFake("r")
			fake.SetLeader(true)
			tel := newChanTelemetry()
			c := newChan[int](t, fake, chanOpts(3, tt.mode), tel.opts...)
			var accepted []bool
			for i := 1; i <= 5; i++ {
				accepted = append(accepted, c.TryWrite(i))
			}
			if !slices.Equal(accepted, tt.accepted) {
				t.Errorf("TryWrite results = %v, want %v", accepted, tt.accepted)
			}
			if got := drainNow(c); !slices.Equal(got, tt.buffer) {
				t.Errorf("buffer = %v, want %v", got, tt.buffer)
			}
			if got := tel.drops(t, "test")["full"]; got != tt.full {
				t.Errorf("full drops = %d, want %d", got, tt.full)
			}
		})
	}
}

// The ring buffer wraps around correctly under every full mode.
func TestChannel_RingWraps(t *testing.T) {
	for _, mode := range []leadership.FullMode{leadership.DropNewest, leadership.DropOldest} {
		t.Run(mode.String(), func(t *testing.T) {
			fake := leadershiptest.NewFake("r")
			fake.SetLeader(true)
			c := newChan[int](t, fake, chanOpts(3, mode))
			var model []int
			for i := range 50 {
				c.TryWrite(i)
				if len(model) < 3 {
					model = append(model, i)
				} else if mode == leadership.DropNewest {
					model[2] = i
				} else {
					model = append(model[1:], i)
				}
				if i%3 == 0 {
					v, _ := c.TryRead()
					if v != model[0] {
						t.Fatalf("step %d: TryRead = %d, want %d", i, v, model[0])
					}
					model = model[1:]
				}
			}
			if got := drainNow(c); !slices.Equal(got, model) {
				t.Fatalf("buffer = %v, want %v", got, model)
			}
		})
	}
}

func TestChannel_Close(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("r")
		fake.SetLeader(true)
		o := chanOpts(2, leadership.Wait)
		o.DrainOnLoss = true
		c, err := leadership.NewChannel[int]("test", fake, o)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		c.TryWrite(1)
		c.TryWrite(2)
		blocked := make(chan error, 1)
		go func() { blocked <- c.Write(ctx, 3) }()
		waiter := make(chan bool, 1)
		go func() {
			ok, err := c.WaitToWrite(ctx)
			waiter <- ok || err != nil
		}()
		synctest.Wait()

		c.Close()
		synctest.Wait()
		if err := <-blocked; !errors.Is(err, leadership.ErrChannelClosed) {
			t.Fatalf("blocked Write after Close = %v, want ErrChannelClosed", err)
		}
		if <-waiter {
			t.Fatal("WaitToWrite after Close = true or error, want false, nil")
		}
		if err := c.Write(ctx, 4); !errors.Is(err, leadership.ErrChannelClosed) {
			t.Fatalf("Write after Close = %v, want ErrChannelClosed", err)
		}
		if c.TryWrite(4) {
			t.Fatal("TryWrite after Close = true")
		}
		c.Close() // idempotent

		// Unsubscribed: a loss after Close does not drain.
		fake.SetLeader(false)
		var got []int
		for v := range c.All(ctx) {
			got = append(got, v)
		}
		if !slices.Equal(got, []int{1, 2}) {
			t.Fatalf("drained after Close = %v, want [1 2]", got)
		}
		if _, err := c.Read(ctx); !errors.Is(err, leadership.ErrChannelClosed) {
			t.Fatalf("Read of a drained closed channel = %v, want ErrChannelClosed", err)
		}
	})
}

func TestChannel_CloseWakesReaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("r")
		c, err := leadership.NewChannel[int]("test", fake, chanOpts(2, leadership.Wait))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		const readers = 3
		errs := make(chan error, readers)
		for range readers {
			go func() {
				_, err := c.Read(ctx)
				errs <- err
			}()
		}
		ranged := make(chan int, 1)
		go func() {
			n := 0
			for range c.All(ctx) {
				n++
			}
			ranged <- n
		}()
		synctest.Wait()
		if len(errs) != 0 || len(ranged) != 0 {
			t.Fatal("readers returned from an empty open channel")
		}
		c.Close()
		for range readers {
			if err := <-errs; !errors.Is(err, leadership.ErrChannelClosed) {
				t.Fatalf("Read = %v, want ErrChannelClosed", err)
			}
		}
		if n := <-ranged; n != 0 {
			t.Fatalf("All yielded %d items, want 0", n)
		}
	})
}

func TestChannel_AllEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("r")
		fake.SetLeader(true)
		c := newChan[int](t, fake, chanOpts(4, leadership.Wait))
		c.TryWrite(1)
		c.TryWrite(2)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var got []int
		for v := range c.All(ctx) {
			got = append(got, v)
		}
		if !slices.Equal(got, []int{1, 2}) || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("All = %v with ctx %v; want [1 2], DeadlineExceeded", got, ctx.Err())
		}

		// Breaking out leaves the rest buffered.
		c.TryWrite(3)
		c.TryWrite(4)
		for range c.All(context.Background()) {
			break
		}
		if got := drainNow(c); !slices.Equal(got, []int{4}) {
			t.Fatalf("after break = %v, want [4]", got)
		}
	})
}

// Blocked readers are woken one item at a time, and every item reaches
// exactly one of them.
func TestChannel_ManyBlockedReaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := leadershiptest.NewFake("r")
		fake.SetLeader(true)
		c := newChan[int](t, fake, chanOpts(8, leadership.Wait))
		ctx := context.Background()
		const readers = 5
		got := make(chan int, 100)
		for range readers {
			go func() {
				for v := range c.All(ctx) {
					got <- v
				}
			}()
		}
		synctest.Wait()
		for i := range 20 {
			if err := c.Write(ctx, i); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if len(got) != 20 {
			t.Fatalf("%d items read, want 20", len(got))
		}
		c.Close()
		synctest.Wait()
		close(got)
		seen := map[int]bool{}
		for v := range got {
			if seen[v] {
				t.Fatalf("item %d read twice", v)
			}
			seen[v] = true
		}
	})
}

// The leader path does not allocate for a non-pointer T.
func TestChannel_LeaderPathZeroAllocs(t *testing.T) {
	fake := leadershiptest.NewFake("r")
	fake.SetLeader(true)
	c := newChan[int](t, fake, chanOpts(16, leadership.Wait))
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		if err := c.Write(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Write+Read allocates %v times per op, want 0", allocs)
	}
}

// The channel starts no goroutine: writes, reads, transitions and drop
// summaries all run on the caller's goroutine.
func TestChannel_StartsNoGoroutine(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	fake := leadershiptest.NewFake("r")
	tel := newChanTelemetry()
	o := chanOpts(2, leadership.DropOldest)
	o.DropReportInterval = 0
	o.DrainOnLoss = true
	c, err := leadership.NewChannel[int]("test", fake, o, tel.opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.TryWrite(1)
	fake.SetLeader(true)
	for i := range 5 {
		c.TryWrite(i)
	}
	c.TryRead()
	fake.SetLeader(false)
	if len(summaries(tel.logs)) == 0 {
		t.Fatal("no drop summary logged")
	}
	goleak.VerifyNone(t, ignore)
}

// A read item is no longer referenced by the buffer.
func TestChannel_ReadItemsAreNotRetained(t *testing.T) {
	fake := leadershiptest.NewFake("r")
	fake.SetLeader(true)
	c := newChan[*[1 << 16]byte](t, fake, chanOpts(4, leadership.Wait))
	p := new([1 << 16]byte)
	w := weak.Make(p)
	c.TryWrite(p)
	p = nil
	if got, ok := c.TryRead(); !ok || got == nil {
		t.Fatal("TryRead found nothing")
	}
	runtime.GC()
	if w.Value() != nil {
		t.Fatal("the buffer still references an item after it was read")
	}
}
