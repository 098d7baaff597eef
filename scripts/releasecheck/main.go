// Command releasecheck writes a file-based Go module proxy (the GOPROXY
// protocol's files: list, .info, .mod and .zip per version) for modules
// checked out in a directory, so that scripts/release-check can build
// consumers of a release before anything is published.
//
// Usage:
//
//	releasecheck -out DIR -version vX.Y.Z -time RFC3339 MODULE_DIR...
//
// Each MODULE_DIR holds a go.mod; its zip is made by golang.org/x/mod/zip,
// which applies the go command's own rules (nested modules, vendor
// folders and files that are not allowed are left out, sizes are checked),
// so what the proxy serves is what a real proxy would serve for a tag.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/zip"
)

func main() {
	out := flag.String("out", "", "the proxy's root folder (GOPROXY=file://DIR)")
	version := flag.String("version", "", "the version every module is released at, vX.Y.Z")
	stamp := flag.String("time", "", "the release commit's time, RFC 3339 (the .info file's Time)")
	flag.Parse()
	if err := run(*out, *version, *stamp, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "releasecheck:", err)
		os.Exit(1)
	}
}

func run(out, version, stamp string, dirs []string) error {
	if out == "" {
		return errors.New("-out is required")
	}
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("-version %q is not a canonical semantic version (vX.Y.Z)", version)
	}
	at, err := time.Parse(time.RFC3339, stamp)
	if err != nil {
		return fmt.Errorf("-time %q: %w", stamp, err)
	}
	if len(dirs) == 0 {
		return errors.New("no module folder given")
	}
	for _, dir := range dirs {
		if err := publish(out, version, at, dir); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
	}
	return nil
}

// publish writes one module's files for version under out.
func publish(out, version string, at time.Time, dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	mf, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		return err
	}
	if mf.Module == nil {
		return errors.New("go.mod has no module line")
	}
	if len(mf.Replace) > 0 {
		return fmt.Errorf("go.mod has %d replace directive(s); a released module must have none", len(mf.Replace))
	}
	mv := module.Version{Path: mf.Module.Mod.Path, Version: version}
	escaped, err := module.EscapePath(mv.Path)
	if err != nil {
		return err
	}
	base := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, at.UTC()})
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": info,
		version + ".mod":  data,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(base, name), body, 0o644); err != nil {
			return err
		}
	}
	f, err := os.Create(filepath.Join(base, version+".zip"))
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(f, mv, dir); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", mv.Path, version)
	return nil
}
