package locking

import "context"

// FenceKey is the context key under which a context of a term answers
// with the term's fence, a uint64 (G2): an elector's Token (package
// core/leadership) and every context derived from it answer it. A
// provider's term check reads it with FenceFrom, so it needs no import of
// the elector.
type FenceKey struct{}

// FenceFrom returns the fence ctx carries under FenceKey: the fencing
// token of the term ctx belongs to. ok is false when ctx carries none, or
// fence 0 (which no fenced lease has).
func FenceFrom(ctx context.Context) (fence uint64, ok bool) {
	fence, ok = ctx.Value(FenceKey{}).(uint64)
	return fence, ok && fence != 0
}
