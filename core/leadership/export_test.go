package leadership

import "context"

// MaxFinalTries exposes maxFinalTries to the external tests.
const MaxFinalTries = maxFinalTries

// ResignTo exposes resign with a named taker (B1) to the external tests.
func ResignTo(ctx context.Context, e *Elector, target string) error { return e.resign(ctx, target) }

// CallsInFlight exposes callsInFlight to the external tests.
const CallsInFlight = callsInFlight

// NoticesAtOnce exposes noticesAtOnce to the external tests.
const NoticesAtOnce = noticesAtOnce

// StopWindow exposes stopWindow to the external tests.
const StopWindow = stopWindow
