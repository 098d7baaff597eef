package configtest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hostloom/hostloom/config"
	"github.com/hostloom/hostloom/config/configtest"
)

// shards is a backend's section: locking.sharded.count.
type shards struct {
	Count int `koanf:"count"`
}

func (*shards) Validate(config.SectionKeys) []*config.FieldError { return nil }

type sharded struct{}

func (sharded) Provider() config.ProviderName { return "sharded" }
func (sharded) Section() config.Section       { return &shards{Count: 1} }

// report prints what a check reports, as a test's t would, with the
// scratch folder left out.
type report struct{ dir string }

func (report) Helper() {}
func (r report) Errorf(format string, args ...any) {
	fmt.Println(strings.ReplaceAll(fmt.Sprintf(format, args...), r.dir+string(filepath.Separator), ""))
}
func (report) Fatal(args ...any) { fmt.Println(args...) }

// A backend's test keeps its rows of the reference in step with its
// section; here the reference lacks the one key.
func ExampleCheckReference() {
	dir, err := os.MkdirTemp("", "configtest")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "configuration.md")
	if err := os.WriteFile(path, []byte("| Key | Type | Default | Environment variable | Meaning |\n"), 0o600); err != nil {
		panic(err)
	}
	configtest.CheckReference(report{dir}, path, sharded{})
	// Output:
	// locking.sharded.count (int, default 1, HOSTLOOM_LOCKING__SHARDED__COUNT) is missing from configuration.md
}
