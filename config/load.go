package config

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
	yamlv3 "go.yaml.in/yaml/v3"
)

// EnvPrefix is the default prefix of configuration environment variables.
const EnvPrefix = "HOSTLOOM_"

// envSeparator separates key levels in environment variable names:
// HOSTLOOM_LEADERSHIP__LEASE is leadership.lease.
const envSeparator = "__"

// FieldError is one problem with one configuration key: Key is the
// dotted key, Source where its value came from ("file app.yaml", "env
// HOSTLOOM_LEADERSHIP__LEASE", "yaml embedded", "default", several of them
// for a check that relates two keys, or "" for a configuration built in
// code), Reason what is wrong, with the value unless it is a secret. Load
// joins one FieldError per problem; use errors.As to inspect them.
type FieldError struct {
	Key    string
	Source string
	Reason string
}

// Error returns "config: <key>: <reason> (<source>)".
func (e *FieldError) Error() string {
	if e.Source == "" {
		return fmt.Sprintf("config: %s: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("config: %s: %s (%s)", e.Key, e.Reason, e.Source)
}

// LoadOption configures Load.
type LoadOption interface {
	apply(*loadSettings)
}

type loadSettings struct {
	optional bool
	prefix   string
	environ  func() []string
	layers   []layer
	backends []Backend
}

type layer struct {
	name string
	data []byte
}

type optionFunc func(*loadSettings)

func (f optionFunc) apply(s *loadSettings) { f(s) }

// Optional makes a missing file (not an unreadable one) mean "defaults and
// environment only". Default: a missing file is an error.
func Optional() LoadOption {
	return optionFunc(func(s *loadSettings) { s.optional = true })
}

// WithEnviron reads environment variables from environ (KEY=VALUE
// entries) instead of os.Environ; nil reads none. For tests and for apps
// that assemble their own environment.
func WithEnviron(environ []string) LoadOption {
	return optionFunc(func(s *loadSettings) {
		s.environ = func() []string { return environ }
	})
}

// WithEnvPrefix changes the prefix of configuration environment variables.
// Default "HOSTLOOM_".
func WithEnvPrefix(prefix string) LoadOption {
	return optionFunc(func(s *loadSettings) { s.prefix = prefix })
}

// WithYAML adds an in-memory YAML document, read after the defaults and
// before the file; name identifies it in errors. Several are read in
// order. Use it for a default configuration embedded in the binary.
func WithYAML(name string, data []byte) LoadOption {
	return optionFunc(func(s *loadSettings) {
		s.layers = append(s.layers, layer{name: name, data: slices.Clone(data)})
	})
}

// Load reads the configuration: the defaults, then each WithYAML document,
// then the YAML file at path (none when path is ""), then environment
// variables (HOSTLOOM_SECTION__KEY, "__" between levels, names
// case-insensitive, lists comma-separated). Later sources win, key by key.
// koanf merges the sources and decodes them (mapstructure) into Config.
//
// Load is strict: an unknown key, a value that does not parse, a value
// outside an enum, options the core packages reject, a missing
// locking.provider (G6), one that names no backend given with
// WithBackends (nor memory or disabled), and the checks of the chosen
// backend's section are errors naming the dotted key, the value and
// its source. Every problem is reported at once (errors.Join of
// *FieldError and file errors); the result is nil then. Secrets are never
// part of an error.
//
// Environment variables under the prefix are configuration when their name
// begins with a section (LOCKING, LEADERSHIP, LEADER_CHANNEL, SCHEDULING);
// other variables under the prefix belong to someone else and are left
// alone.
func Load(path string, opts ...LoadOption) (*Config, error) {
	s := loadSettings{prefix: EnvPrefix, environ: os.Environ}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	if err := checkBackends(s.backends); err != nil {
		return nil, err
	}
	all := koanf.New(".")
	src := sources{}
	var read []string // the sources read, in order
	var fileErrs []error
	merge := func(name string, k *koanf.Koanf, keySource func(key string) string) {
		read = append(read, name)
		for key := range k.All() {
			src[key] = keySource(key)
		}
		// Merge fails only with a custom merge function; there is none.
		_ = all.Merge(k)
	}
	same := func(name string) func(string) string { return func(string) string { return name } }
	for _, l := range s.layers {
		name := "yaml " + l.name
		k, err := loadYAML(rawbytes.Provider(l.data))
		if err != nil {
			fileErrs = append(fileErrs, fmt.Errorf("config: %s: %w", name, err))
			continue
		}
		merge(name, k, same(name))
	}
	if path != "" {
		name := "file " + path
		info, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && s.optional:
		case err != nil:
			fileErrs = append(fileErrs, fmt.Errorf("config: file %q: %w", path, unwrapPath(err)))
		case info.IsDir():
			fileErrs = append(fileErrs, fmt.Errorf("config: file %q is a directory", path))
		default:
			if k, err := loadYAML(file.Provider(path)); err != nil {
				fileErrs = append(fileErrs, fmt.Errorf("config: %s: %w", name, err))
			} else {
				merge(name, k, same(name))
			}
		}
	}
	k, names, errs := loadEnv(s.prefix, s.environ)
	merge("env", k, func(key string) string { return "env " + names[key] })
	rank := map[string]int{}
	for i, name := range read {
		rank[name] = i
	}
	order := func(src string) int {
		if strings.HasPrefix(src, "env ") {
			return rank["env"]
		}
		return rank[src]
	}

	cfg := Defaults()
	cfg.Locking = cfg.Locking.WithBackends(withDefaultBackends(s.backends)...)
	errs = append(errs, decode(all, cfg, src)...)
	slices.SortStableFunc(errs, func(a, b *FieldError) int {
		if c := cmp.Compare(order(a.Source), order(b.Source)); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	cfg.setSources(src)
	undecoded := slices.Clone(errs)
	for _, e := range cfg.validate() {
		if slices.ContainsFunc(undecoded, func(d *FieldError) bool { return d.Key == e.Key || strings.HasPrefix(d.Key, e.Key+".") }) {
			continue // the value did not decode: its error says why
		}
		if e.Key == "locking.provider" && cfg.Locking.Provider == "" {
			e.Source = "not set in " + describeSources(read, s.prefix)
		}
		errs = append(errs, e)
	}
	out := slices.Clone(fileErrs)
	for _, e := range errs {
		out = append(out, e)
	}
	if err := errors.Join(out...); err != nil {
		return nil, err
	}
	return cfg, nil
}

// setSources gives the configuration and the sections that report sources
// the record of where each key came from.
func (c *Config) setSources(src sources) {
	c.src = src
	c.Locking.src = src
	c.Leadership.src = src
	c.Scheduling.src = src
}

// describeSources lists the sources read for an error about a key none of
// them set: the defaults, the documents and file, and the variable
// that would set locking.provider.
func describeSources(read []string, prefix string) string {
	var parts []string
	for _, r := range read {
		if r != "env" {
			parts = append(parts, r)
		}
	}
	parts = append(parts, "env "+prefix+"LOCKING"+envSeparator+"PROVIDER")
	return strings.Join(parts, ", ")
}

// unwrapPath drops the *fs.PathError wrapper (the path is already named).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// loadYAML parses one YAML source into its own koanf instance.
func loadYAML(p koanf.Provider) (*koanf.Koanf, error) {
	k := koanf.New(".")
	if err := k.Load(p, yaml.Parser()); err != nil {
		return nil, yamlError(err)
	}
	return k, nil
}

// yamlQuoted matches the values yaml.v3 quotes in type errors.
var yamlQuoted = regexp.MustCompile("`[^`]*`")

// yamlError keeps a YAML error's line number but not the document text it
// may quote (which could be a secret).
func yamlError(err error) error {
	var te *yamlv3.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			if strings.Contains(m, "cannot unmarshal") {
				m = yamlQuoted.ReplaceAllString(m, "value") + " (the document must be a mapping of sections)"
			}
			msgs[i] = m
		}
		return fmt.Errorf("yaml: %s", strings.Join(msgs, "; "))
	}
	return err
}

// sections are the top-level keys; an environment variable is
// configuration when its name starts with one of them.
var sections = []string{"locking", "leadership", "leader_channel", "scheduling"}

// loadEnv reads the configuration variables of environ into a koanf
// instance; names maps each dotted key to the variable that set it.
func loadEnv(prefix string, environ func() []string) (*koanf.Koanf, map[string]string, []*FieldError) {
	names := map[string]string{} // key -> variable name
	var conflicts []*FieldError
	p := env.Provider(".", env.Opt{
		Prefix:      prefix,
		EnvironFunc: environ,
		TransformFunc: func(name, value string) (string, any) {
			key := strings.ToLower(strings.TrimPrefix(name, prefix))
			if !isConfigVar(key) {
				return "", nil
			}
			key = strings.ReplaceAll(key, envSeparator, ".")
			if other, ok := names[key]; ok {
				conflicts = append(conflicts, &FieldError{Key: key, Source: "env " + name,
					Reason: fmt.Sprintf("also set by %s (names are case-insensitive)", other)})
				return "", nil
			}
			names[key] = name
			return key, value
		},
	})
	k := koanf.New(".")
	// The environment provider cannot fail: it reads a list of strings.
	_ = k.Load(p, nil)
	return k, names, conflicts
}

func isConfigVar(key string) bool {
	for _, s := range sections {
		if strings.HasPrefix(key, s) {
			return true
		}
	}
	return false
}
