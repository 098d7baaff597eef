package scheduling_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/hostloom/hostloom/core/leadership/leadershiptest"
	"github.com/hostloom/hostloom/core/scheduling"
)

// slotRun is a run as the job saw it through its ctx.
type slotRun struct {
	who        string
	slot       time.Duration // since t0
	start, end time.Duration // since t0
	attempt    int
	err        error
}

func (r slotRun) String() string {
	s := fmt.Sprintf("%s:%v@%v", r.who, r.slot, r.start)
	if r.attempt != 1 {
		s += fmt.Sprintf("#%d", r.attempt)
	}
	if r.err != nil {
		s += "!"
	}
	return s
}

// slotRecorder records runs with their slot and attempt (SlotFrom,
// AttemptFrom).
type slotRecorder struct {
	t0   time.Time
	mu   sync.Mutex
	runs []slotRun
}

// job returns a Run func for who that lasts d or until its ctx ends.
func (r *slotRecorder) job(who string, d time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		slot, ok1 := scheduling.SlotFrom(ctx)
		attempt, ok2 := scheduling.AttemptFrom(ctx)
		if !ok1 || !ok2 {
			return errors.New("run ctx carries no slot or attempt")
		}
		sr := slotRun{who: who, slot: slot.Sub(r.t0), start: time.Since(r.t0), attempt: attempt}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			sr.err = ctx.Err()
		}
		sr.end = time.Since(r.t0)
		r.mu.Lock()
		r.runs = append(r.runs, sr)
		r.mu.Unlock()
		return sr.err
	}
}

func (r *slotRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.runs)
}

func action(a string) attribute.KeyValue { return attribute.String("hostloom.action", a) }

// histogram returns the count and sum of the float64 histogram name's
// points whose attributes include want.
func (m meter) histogram(t *testing.T, name string, want ...attribute.KeyValue) (uint64, float64) {
	t.Helper()
	var n uint64
	var sum float64
	for _, h := range dataOf[metricdata.Histogram[float64]](t, m, name) {
		for _, p := range h.DataPoints {
			if matches(p.Attributes, want) {
				n += p.Count
				sum += p.Sum
			}
		}
	}
	return n, sum
}

// TestScheduler_S7_OverlapPolicies: a job of Every(1m) whose runs last
// 2m10s, under each overlap policy, on a leader without a slot store.
func TestScheduler_S7_OverlapPolicies(t *testing.T) {
	for _, tt := range []struct {
		policy                scheduling.OverlapPolicy
		want                  string
		action                string
		actions, skipped, err int64
	}{
		// Runs at 1m, 4m, 7m; slots 2, 3, 5, 6, 8 skipped.
		{0, "[a:1m0s@1m0s a:4m0s@4m0s a:7m0s@7m0s!]", scheduling.OverlapActionSkip, 5, 5, 0},
		// After each run, the latest slot that fell due meanwhile; the
		// slots it superseded (2, 4, 6) are skipped.
		{scheduling.OverlapBufferOne, "[a:1m0s@1m0s a:3m0s@3m10s a:5m0s@5m20s a:7m0s@7m30s!]", scheduling.OverlapActionBuffer, 7, 3, 0},
		// Every slot runs at once; each run is cancelled by the next slot.
		{scheduling.OverlapCancelPrevious, "[a:1m0s@1m0s! a:2m0s@2m0s! a:3m0s@3m0s! a:4m0s@4m0s! a:5m0s@5m0s! a:6m0s@6m0s! a:7m0s@7m0s! a:8m0s@8m0s!]", scheduling.OverlapActionCancel, 7, 0, 7},
	} {
		t.Run(tt.policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mt := newMeter()
				f := leadershiptest.NewFake("billing")
				f.SetLeader(true)
				rec := &slotRecorder{t0: time.Now()}
				s, err := scheduling.New(f, scheduling.WithMeterProvider(mt.provider))
				if err != nil {
					t.Fatal(err)
				}
				mustAdd(t, s, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Overlap: tt.policy, Run: rec.job("a", 2*time.Minute+10*time.Second)})
				mustStart(t, s)
				time.Sleep(m(8.5))
				if err := s.Stop(context.Background()); err != nil {
					t.Fatal(err)
				}
				if got := rec.String(); got != tt.want {
					t.Errorf("runs\n got %s\nwant %s", got, tt.want)
				}
				if n := mt.sum(t, scheduling.MetricOverlap, job("sync"), action(tt.action)); n != tt.actions {
					t.Errorf("overlap %s = %d, want %d", tt.action, n, tt.actions)
				}
				if n := mt.sum(t, scheduling.MetricSkipped, job("sync"), reason(scheduling.SkipOverlap)); n != tt.skipped {
					t.Errorf("skipped overlap = %d, want %d", n, tt.skipped)
				}
				if n := mt.sum(t, scheduling.MetricRuns, job("sync"), outcome("canceled")); n != tt.err+1 {
					t.Errorf("canceled runs = %d, want %d (the last one by Stop)", n, tt.err+1)
				}
			})
		})
	}
}

// TestScheduler_S7_S8_UnknownPolicies: Add rejects unknown policy values,
// naming the job and the value; UnmarshalText names the value and the
// choices.
func TestScheduler_S7_S8_UnknownPolicies(t *testing.T) {
	s := newScheduler(t, leadershiptest.NewFake("billing"))
	for _, j := range []scheduling.Job{
		{Name: "o", Overlap: 7},
		{Name: "c", CatchUp: -1},
	} {
		j.Schedule, j.Run = scheduling.Every(time.Minute), nop
		err := s.Add(j)
		if err == nil || !strings.Contains(err.Error(), `"`+j.Name+`"`) || !strings.Contains(err.Error(), fmt.Sprint(int(j.Overlap)+int(j.CatchUp))) {
			t.Errorf("Add(%+v) = %v, want an error naming the job and the value", j, err)
		}
	}
	var o scheduling.OverlapPolicy
	if err := o.UnmarshalText([]byte("queue")); err == nil || !strings.Contains(err.Error(), `"queue"`) || !strings.Contains(err.Error(), "buffer_one") {
		t.Errorf("UnmarshalText(queue) = %v", err)
	}
	var c scheduling.CatchUpPolicy
	if err := c.UnmarshalText([]byte("some")); err == nil || !strings.Contains(err.Error(), `"some"`) {
		t.Errorf("UnmarshalText(some) = %v", err)
	}
	for _, p := range []scheduling.OverlapPolicy{scheduling.OverlapSkip, scheduling.OverlapBufferOne, scheduling.OverlapCancelPrevious} {
		b, err := p.MarshalText()
		var back scheduling.OverlapPolicy
		if err != nil || back.UnmarshalText(b) != nil || back != p {
			t.Errorf("%v round trip: %s %v -> %v", p, b, err, back)
		}
	}
	for _, p := range []scheduling.CatchUpPolicy{scheduling.CatchUpLatest, scheduling.CatchUpAll, scheduling.CatchUpNone} {
		b, err := p.MarshalText()
		var back scheduling.CatchUpPolicy
		if err != nil || back.UnmarshalText(b) != nil || back != p {
			t.Errorf("%v round trip: %s %v -> %v", p, b, err, back)
		}
	}
	if err := o.UnmarshalText([]byte("Cancel-Previous")); err != nil || o != scheduling.OverlapCancelPrevious {
		t.Errorf("UnmarshalText(Cancel-Previous) = %v, %v", o, err)
	}
	if _, err := scheduling.OverlapPolicy(9).MarshalText(); err == nil {
		t.Error("MarshalText of an unknown policy: no error")
	}
	if scheduling.OverlapPolicy(0).String() != "skip" || scheduling.CatchUpPolicy(0).String() != "latest" {
		t.Error("zero policies do not name their defaults")
	}
}

// TestPolicy_S7_S8_TextForms pins the words of both policy types: names,
// the zero value's default, an unknown value's String, and the errors of
// MarshalText and UnmarshalText (config reports them as they are).
func TestPolicy_S7_S8_TextForms(t *testing.T) {
	type forms struct{ str, text, marshalErr string }
	for _, tt := range []struct {
		o, c   int
		ov, cu forms
	}{
		{0, 0, forms{"skip", "skip", ""}, forms{"latest", "latest", ""}},
		{2, 2, forms{"buffer_one", "buffer_one", ""}, forms{"all", "all", ""}},
		{3, 3, forms{"cancel_previous", "cancel_previous", ""}, forms{"none", "none", ""}},
		{4, 4, forms{"OverlapPolicy(4)", "", "scheduling: unknown overlap policy 4"}, forms{"CatchUpPolicy(4)", "", "scheduling: unknown catch-up policy 4"}},
		{-1, -1, forms{"OverlapPolicy(-1)", "", "scheduling: unknown overlap policy -1"}, forms{"CatchUpPolicy(-1)", "", "scheduling: unknown catch-up policy -1"}},
	} {
		check := func(s fmt.Stringer, marshal func() ([]byte, error), want forms) {
			t.Helper()
			b, err := marshal()
			got := forms{s.String(), string(b), ""}
			if err != nil {
				got.marshalErr = err.Error()
			}
			if got != want {
				t.Errorf("%d: got %+v, want %+v", tt.o, got, want)
			}
		}
		o, c := scheduling.OverlapPolicy(tt.o), scheduling.CatchUpPolicy(tt.c)
		check(o, o.MarshalText, tt.ov)
		check(c, c.MarshalText, tt.cu)
	}
	var o scheduling.OverlapPolicy
	if err := o.UnmarshalText([]byte(" Buffer-One ")); err != nil || o != scheduling.OverlapBufferOne {
		t.Errorf("UnmarshalText( Buffer-One ) = %v, %v", o, err)
	}
	if err := o.UnmarshalText([]byte("latest")); err == nil || err.Error() != `scheduling: unknown overlap policy "latest" (want skip, buffer_one or cancel_previous)` {
		t.Errorf("UnmarshalText(latest) = %v", err)
	}
	var c scheduling.CatchUpPolicy
	if err := c.UnmarshalText([]byte("ALL")); err != nil || c != scheduling.CatchUpAll {
		t.Errorf("UnmarshalText(ALL) = %v, %v", c, err)
	}
	if err := c.UnmarshalText([]byte("")); err == nil || err.Error() != `scheduling: unknown catch-up policy "" (want latest, all or none)` {
		t.Errorf("UnmarshalText(\"\") = %v", err)
	}
}

// TestScheduler_S8_CatchUpAcrossFailover: a leads slots 0-2 and loses at
// 2m30s; b leads at 5m30s with a 3m30s window (slots 3, 4, 5 unrecorded
// in it). Each policy decides what b runs; missed slots are counted and
// logged with their count.
func TestScheduler_S8_CatchUpAcrossFailover(t *testing.T) {
	for _, tt := range []struct {
		policy scheduling.CatchUpPolicy
		want   string
		missed int64
		lag    time.Duration
	}{
		{scheduling.CatchUpLatest, "[a:0s@0s a:1m0s@1m0s a:2m0s@2m0s b:5m0s@5m30s b:6m0s@6m0s]", 2, 30 * time.Second},
		{scheduling.CatchUpAll, "[a:0s@0s a:1m0s@1m0s a:2m0s@2m0s b:3m0s@5m30s b:4m0s@5m38s b:5m0s@5m46s b:6m0s@6m0s]", 0, (2*time.Minute + 30*time.Second) + (time.Minute + 38*time.Second) + 46*time.Second},
		{scheduling.CatchUpNone, "[a:0s@0s a:1m0s@1m0s a:2m0s@2m0s b:6m0s@6m0s]", 3, 0},
	} {
		t.Run(tt.policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &slotRecorder{t0: time.Now()}
				store := newStore(t)
				mb := newMeter()
				core, logs := observer.New(zap.InfoLevel)
				fa, fb := leadershiptest.NewFake("billing"), leadershiptest.NewFake("billing")
				window := scheduling.WithMisfireWindow(m(3.5))
				a := newScheduler(t, fa, scheduling.WithSlotStore(store), window)
				b := newScheduler(t, fb, scheduling.WithSlotStore(store), window, scheduling.WithMeterProvider(mb.provider), scheduling.WithLogger(zap.New(core)))
				mustAdd(t, a, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), Run: rec.job("a", 8*time.Second)})
				mustAdd(t, b, scheduling.Job{Name: "sync", Schedule: scheduling.Every(time.Minute), CatchUp: tt.policy, Run: rec.job("b", 8*time.Second)})
				fa.SetLeader(true)
				mustStart(t, a)
				mustStart(t, b)
				time.Sleep(m(2.5))
				fa.SetLeader(false)
				time.Sleep(m(3))
				fb.SetLeader(true)
				time.Sleep(m(1) + 10*time.Second)
				synctest.Wait()
				if got := rec.String(); got != tt.want {
					t.Errorf("runs\n got %s\nwant %s", got, tt.want)
				}
				if n := mb.sum(t, scheduling.MetricMissed, job("sync")); n != tt.missed {
					t.Errorf("b missed = %d, want %d", n, tt.missed)
				}
				var logged int64
				for _, e := range logs.FilterMessage("SchedulerSlotsMissed").All() {
					logged += e.ContextMap()["count"].(int64)
				}
				if logged != tt.missed {
					t.Errorf("missed slots logged = %d, want %d", logged, tt.missed)
				}
				n, sum := mb.histogram(t, scheduling.MetricLag, job("sync"))
				if runs := uint64(strings.Count(tt.want, "b:")); n != runs || time.Duration(sum*float64(time.Second)) != tt.lag {
					t.Errorf("lag: %d runs, sum %vs; want %d, %v", n, sum, runs, tt.lag)
				}
			})
		})
	}
}

// TestScheduler_G2_SlotFromOutsideARun: contexts that are not a run's carry
// no slot or attempt.
func TestScheduler_G2_SlotFromOutsideARun(t *testing.T) {
	if _, ok := scheduling.SlotFrom(context.Background()); ok {
		t.Error("SlotFrom(Background) reports a slot")
	}
	if _, ok := scheduling.AttemptFrom(context.Background()); ok {
		t.Error("AttemptFrom(Background) reports an attempt")
	}
}
