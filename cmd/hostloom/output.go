package main

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.yaml.in/yaml/v3"
)

// writeJSON writes v as indented JSON, one document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newTable returns a tabwriter for people: columns padded by two spaces,
// like kubectl's. Write rows with tab-separated cells; Flush at the end.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// dash shows an absent value.
const dash = "-"

// showDuration rounds d for a table: microseconds below a millisecond,
// milliseconds below ten seconds, tenths of a second above.
func showDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return dash
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < 10*time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}

// showUint shows n, or a dash for 0.
func showUint(n uint64) string {
	if n == 0 {
		return dash
	}
	return strconv.FormatUint(n, 10)
}

// showString shows s, or a dash for "".
func showString(s string) string {
	if s == "" {
		return dash
	}
	return s
}

// showTime shows t in UTC to the millisecond, or a dash.
func showTime(t time.Time) string {
	if t.IsZero() {
		return dash
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// Output formats of -o/--output.
const (
	outTable = ""     // a table for people (the default)
	outWide  = "wide" // the table with more columns
	outJSON  = "json" // one JSON document (watch: one object a line)
	outYAML  = "yaml" // one YAML document (watch: one document per event)
)

// outputFormats lists the -o values, for messages and completion.
var outputFormats = []string{outJSON, outYAML, outWide}

// resolveOutput checks -o and folds --json into it (--json is -o json);
// a contradiction between the two is a command-line error.
func (g *globals) resolveOutput() error {
	switch g.output {
	case outTable, outWide, outJSON, outYAML:
	default:
		return badUsage("--output %q: want one of %s", g.output, strings.Join(outputFormats, ", "))
	}
	if g.json {
		if g.output != outTable && g.output != outJSON {
			return badUsage("--json and --output %s contradict each other (--json is --output json)", g.output)
		}
		g.output = outJSON
	}
	return nil
}

// structured reports whether the output is for scripts (JSON or YAML).
func (g *globals) structured() bool { return g.output == outJSON || g.output == outYAML }

// wide reports whether a table shows its extra columns.
func (g *globals) wide() bool { return g.output == outWide }

// write writes v as one document in the chosen structured format.
func (g *globals) write(w io.Writer, v any) error {
	if g.output == outYAML {
		return writeYAML(w, v)
	}
	return writeJSON(w, v)
}

// writeYAML writes v as one YAML document with the keys and values of its
// JSON form (the same names, in the same order): v is encoded to JSON,
// which is YAML, read back as a node tree and written in block style.
func writeYAML(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return err
	}
	blockStyle(&doc)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	return enc.Close()
}

// blockStyle clears the flow and quoting styles JSON's syntax gave the
// nodes, so the encoder writes block YAML and quotes only strings that
// would otherwise read as another type.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}
