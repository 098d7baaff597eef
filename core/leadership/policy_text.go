package leadership

import (
	"fmt"
	"strings"
)

// MarshalText implements encoding.TextMarshaler with String's names. An
// unknown policy is an error.
func (w WhenUncoordinated) MarshalText() ([]byte, error) {
	if w != Follow && w != Lead {
		return nil, fmt.Errorf("leadership: when_uncoordinated %d: want follow or lead", int(w))
	}
	return []byte(w.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler: "follow" or "lead",
// ignoring case and surrounding space, like ParseFullMode.
func (w *WhenUncoordinated) UnmarshalText(b []byte) error {
	switch strings.ToLower(strings.TrimSpace(string(b))) {
	case "follow":
		*w = Follow
	case "lead":
		*w = Lead
	default:
		return fmt.Errorf("leadership: when_uncoordinated %q: want follow or lead", string(b))
	}
	return nil
}
