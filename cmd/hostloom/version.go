package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionJSON is the version verb's document.
type versionJSON struct {
	// Module is the command's module path.
	Module string `json:"module"`
	// Version is the module version the binary was built at ("v0.1.0" from
	// go install …@v0.1.0), or "(devel)" for a build from a checkout.
	Version string `json:"version"`
	// Revision and Modified describe the checkout a (devel) build came
	// from, when the go command recorded them.
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// Go is the Go version that built the binary.
	Go string `json:"go"`
}

// buildVersion reads the binary's build information.
func buildVersion() versionJSON {
	v := versionJSON{Module: "github.com/hostloom/hostloom/cmd/hostloom", Version: "(unknown)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func newVersion(g *globals, sio stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Show the hostloom version and the Go version that built it",
		Long: `version prints the module version hostloom was built at (the one given
to go install …@VERSION; "(devel)" for a build from a checkout, with its
revision when known) and the Go version that built it. It reads no
configuration and contacts no server.`,
		Example: `  hostloom version
  hostloom version -o json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := buildVersion()
			if g.structured() {
				return g.write(sio.out, v)
			}
			rev := ""
			if v.Revision != "" {
				rev = " " + v.Revision
				if v.Modified {
					rev += "+modified"
				}
			}
			_, err := fmt.Fprintf(sio.out, "hostloom %s%s (%s)\n", v.Version, rev, v.Go)
			return err
		},
	}
}
