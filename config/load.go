package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
	yamlv3 "go.yaml.in/yaml/v3"
)

// EnvPrefix is the default prefix of configuration environment variables.
const EnvPrefix = "HOSTLOOM_"

// envSeparator separates key levels in environment variable names:
// HOSTLOOM_LEADERSHIP__LEASE is leadership.lease.
const envSeparator = "__"

// KeyError is one problem with one key: Key is the dotted key, Source
// where the value came from ("file app.yaml", "env HOSTLOOM_LEADERSHIP__LEASE",
// or "" for a check across the merged result), Reason what is wrong. Load
// joins one KeyError per problem; use errors.As to inspect them.
type KeyError struct {
	Key    string
	Source string
	Reason string
}

// Error returns "config: <key>: <reason> (<source>)".
func (e *KeyError) Error() string {
	if e.Source == "" {
		return fmt.Sprintf("config: %s: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("config: %s: %s (%s)", e.Key, e.Reason, e.Source)
}

// Option configures Load.
type Option interface {
	apply(*loadSettings)
}

type loadSettings struct {
	optional bool
	prefix   string
	environ  func() []string
	layers   []layer
}

type layer struct {
	name string
	data []byte
}

type optionFunc func(*loadSettings)

func (f optionFunc) apply(s *loadSettings) { f(s) }

// Optional makes a missing file (not an unreadable one) mean "defaults and
// environment only". Default: a missing file is an error.
func Optional() Option {
	return optionFunc(func(s *loadSettings) { s.optional = true })
}

// WithEnviron reads environment variables from environ (KEY=VALUE
// entries) instead of os.Environ; nil reads none. For tests and for apps
// that assemble their own environment.
func WithEnviron(environ []string) Option {
	return optionFunc(func(s *loadSettings) {
		s.environ = func() []string { return environ }
	})
}

// WithEnvPrefix changes the prefix of configuration environment variables.
// Default "HOSTLOOM_".
func WithEnvPrefix(prefix string) Option {
	return optionFunc(func(s *loadSettings) { s.prefix = prefix })
}

// WithYAML adds an in-memory YAML document, read after the defaults and
// before the file; name identifies it in errors. Several are read in
// order. Use it for a default configuration embedded in the binary.
func WithYAML(name string, data []byte) Option {
	return optionFunc(func(s *loadSettings) {
		s.layers = append(s.layers, layer{name: name, data: slices.Clone(data)})
	})
}

// Load reads the configuration: the defaults, then each WithYAML document,
// then the YAML file at path (none when path is ""), then environment
// variables (HOSTLOOM_SECTION__KEY, "__" between levels, names
// case-insensitive, lists comma-separated). Later sources win.
//
// Load is strict: an unknown key, a value that does not parse, a value
// outside an enum, and options the core packages reject are errors naming
// the key, the value and its source. Every problem is reported at once
// (errors.Join of *KeyError and file errors); the result is nil then.
// Secrets are never part of an error.
//
// Environment variables under the prefix are configuration when their name
// begins with a section (LOCKING, LEADERSHIP, LEADER_CHANNEL, SCHEDULING);
// other variables under the prefix belong to someone else and are left
// alone.
func Load(path string, opts ...Option) (*Config, error) {
	s := loadSettings{prefix: EnvPrefix, environ: os.Environ}
	for _, o := range opts {
		if o != nil {
			o.apply(&s)
		}
	}
	cfg := Defaults()
	root := reflect.ValueOf(cfg).Elem()
	var errs []error
	for _, l := range s.layers {
		errs = append(errs, loadYAML(root, "yaml "+l.name, bytesProvider(l.data))...)
	}
	if path != "" {
		info, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && s.optional:
		case err != nil:
			errs = append(errs, fmt.Errorf("config: file %q: %w", path, unwrapPath(err)))
		case info.IsDir():
			errs = append(errs, fmt.Errorf("config: file %q is a directory", path))
		default:
			errs = append(errs, loadYAML(root, "file "+path, file.Provider(path))...)
		}
	}
	errs = append(errs, loadEnv(root, s.prefix, s.environ)...)
	errs = append(errs, cfg.Validate())
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cfg, nil
}

// unwrapPath drops the *fs.PathError wrapper (the path is already named).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// bytesProvider is a koanf.Provider over an in-memory document.
type bytesProvider []byte

// ReadBytes returns the document.
func (b bytesProvider) ReadBytes() ([]byte, error) { return b, nil }

// Read is not supported: the document is parsed by koanf's YAML parser.
func (b bytesProvider) Read() (map[string]any, error) {
	return nil, errors.New("config: bytes provider reads bytes only")
}

// loadYAML parses one YAML source with its own koanf instance and decodes
// every key into root.
func loadYAML(root reflect.Value, source string, p koanf.Provider) []error {
	k := koanf.New(".")
	if err := k.Load(p, yaml.Parser()); err != nil {
		return []error{fmt.Errorf("config: %s: %w", source, yamlError(err))}
	}
	flat := k.All()
	keys := make([]string, 0, len(flat))
	for key := range flat {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	var errs []error
	for _, key := range keys {
		if err := set(root, strings.Split(key, "."), flat[key]); err != nil {
			errs = append(errs, &KeyError{Key: key, Source: source, Reason: err.Error()})
		}
	}
	return errs
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

// loadEnv decodes the configuration variables of environ into root.
func loadEnv(root reflect.Value, prefix string, environ func() []string) []error {
	names := map[string]string{} // key -> variable name
	var conflicts []error
	p := env.Provider("", env.Opt{
		Prefix:      prefix,
		EnvironFunc: environ,
		TransformFunc: func(name, value string) (string, any) {
			key := strings.ToLower(strings.TrimPrefix(name, prefix))
			if !isConfigVar(key) {
				return "", nil
			}
			key = strings.ReplaceAll(key, envSeparator, ".")
			if other, ok := names[key]; ok {
				conflicts = append(conflicts, &KeyError{Key: key, Source: "env " + name,
					Reason: fmt.Sprintf("also set by %s (names are case-insensitive)", other)})
				return "", nil
			}
			names[key] = name
			return key, value
		},
	})
	k := koanf.New("\x00") // keys are already dotted; load them flat
	if err := k.Load(p, nil); err != nil {
		return []error{fmt.Errorf("config: environment: %w", err)}
	}
	flat := k.All()
	keys := make([]string, 0, len(flat))
	for key := range flat {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	errs := conflicts
	for _, key := range keys {
		if err := set(root, strings.Split(key, "."), flat[key]); err != nil {
			errs = append(errs, &KeyError{Key: key, Source: "env " + names[key], Reason: err.Error()})
		}
	}
	return errs
}

func isConfigVar(key string) bool {
	for _, s := range sections {
		if strings.HasPrefix(key, s) {
			return true
		}
	}
	return false
}
