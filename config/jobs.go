package config

import (
	"fmt"

	"github.com/hostloom/hostloom/core/scheduling/policy"
)

// JobOverrides are scheduling.jobs.<job>: settings of a job the
// deployment decides. A nil field keeps what the code chose.
type JobOverrides struct {
	// CatchUp replaces the job's catch-up policy (S8): latest, all or
	// none.
	CatchUp *policy.CatchUpPolicy `koanf:"catch_up" default:"code"`
	// Overlap replaces the job's overlap policy (S7): skip, buffer_one or
	// cancel_previous.
	Overlap *policy.OverlapPolicy `koanf:"overlap" default:"code"`
	// Paused, when set, pauses (true) or resumes (false) the job through
	// the slot store when its scheduler starts (S10).
	Paused *bool `koanf:"paused" default:"code"`
}

// Source reports where the value of the dotted key
// (scheduling.jobs.invoices.paused) came from; see Config.Source.
func (s SchedulingConfig) Source(key string) string { return s.src.of(key) }

// Job returns the overrides of the job named name; ok is false when the
// configuration has none.
func (s SchedulingConfig) Job(name string) (o JobOverrides, ok bool) {
	o, ok = s.Jobs[name]
	return o, ok
}

// CheckJobs reports every scheduling.jobs.<name> key that names none of
// the declared jobs, so a misspelt job fails start instead of being
// ignored. Each problem is a *FieldError naming the key, its source and
// the declared jobs; the errors are joined.
func (s SchedulingConfig) CheckJobs(declared ...string) error {
	return checkDeclared(s.Jobs, "scheduling.jobs.", s.src, declared, func(_ string, known []string) string {
		return fmt.Sprintf("names no job of the app; jobs: %s", list(known))
	})
}
