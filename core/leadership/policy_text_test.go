package leadership_test

import (
	"encoding"
	"testing"

	"github.com/hostloom/hostloom/core/leadership"
)

var (
	_ encoding.TextMarshaler   = leadership.Follow
	_ encoding.TextUnmarshaler = new(leadership.WhenUncoordinated)
)

func TestWhenUncoordinated_E9_TextRoundTrip(t *testing.T) {
	for _, w := range []leadership.WhenUncoordinated{leadership.Follow, leadership.Lead} {
		b, err := w.MarshalText()
		if err != nil {
			t.Fatalf("MarshalText(%v): %v", w, err)
		}
		var got leadership.WhenUncoordinated
		if err := got.UnmarshalText(b); err != nil || got != w {
			t.Fatalf("UnmarshalText(%q) = %v, %v; want %v", b, got, err, w)
		}
	}
	var got leadership.WhenUncoordinated
	if err := got.UnmarshalText([]byte(" Lead ")); err != nil || got != leadership.Lead {
		t.Errorf("UnmarshalText(\" Lead \") = %v, %v", got, err)
	}
	for _, bad := range []string{"", "leader", "0"} {
		got = leadership.Follow
		if err := got.UnmarshalText([]byte(bad)); err == nil || got != leadership.Follow {
			t.Errorf("UnmarshalText(%q) = %v, %v; want an error and no change", bad, got, err)
		}
	}
	if _, err := leadership.WhenUncoordinated(0).MarshalText(); err == nil {
		t.Error("MarshalText(0) succeeded")
	}
}
