package locking_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hostloom/hostloom/core/locking"
)

// TestOptions_L10_ErrorsAreStructured: each problem of Validate is an
// *OptionError naming the Go field, its value and the fields its reason
// relates it to, matching ErrInvalidOptions, so a caller maps it to its own
// names without reading the message.
func TestOptions_L10_ErrorsAreStructured(t *testing.T) {
	err := locking.Options{MaxLease: -time.Second, UseHashTags: true}.Validate()
	var got []*locking.OptionError
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var oe *locking.OptionError
		if !errors.As(e, &oe) || !errors.Is(e, locking.ErrInvalidOptions) {
			t.Fatalf("%v is not an OptionError matching ErrInvalidOptions", e)
		}
		got = append(got, oe)
	}
	if len(got) != 2 {
		t.Fatalf("errors %v, want two", err)
	}
	if g := got[0]; g.Field != "MaxLease" || g.Value != -time.Second || g.Reason != "-1s must not be negative" || len(g.Related) != 0 {
		t.Errorf("first %+v", g)
	}
	if g := got[1]; g.Field != "UseHashTags" || g.Value != true || len(g.Related) != 1 || g.Related[0] != "Namespace" {
		t.Errorf("second %+v", g)
	}
	if want := `locking: invalid options: Options.UseHashTags requires a namespace, Options.Namespace is ""`; got[1].Error() != want {
		t.Errorf("Error() = %q, want %q", got[1].Error(), want)
	}
}
