package pglockbuild_test

import (
	"testing"

	"github.com/hostloom/hostloom/backends/postgres/pglockbuild"
	"github.com/hostloom/hostloom/config/configtest"
)

// TestDocs_X1_ReferenceMatchesSection keeps this backend's rows of
// docs/configuration.md in sync with its section: config's own test
// checks every other row, and leaves these to the backend's module.
func TestDocs_X1_ReferenceMatchesSection(t *testing.T) {
	configtest.CheckReference(t, "../../../docs/configuration.md", pglockbuild.Backend{})
}
