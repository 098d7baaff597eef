package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed: the server, config, no such role
	exitUsage = 2 // the command line was wrong: unknown verb or flag, missing argument
)

// stdio is what a run of the CLI reads and writes; main passes the
// process's, tests their own.
type stdio struct {
	in      io.Reader
	out     io.Writer
	err     io.Writer
	tty     bool     // in is a terminal (release --force asks there)
	environ []string // KEY=VALUE; HOSTLOOM_* configure like the app
}

// globals are the flags every verb takes.
type globals struct {
	configPath string
	json       bool   // --json, the same as -o json
	output     string // -o: outTable, outWide, outJSON or outYAML
	namespace  string // --namespace; "" keeps the configuration's
	timeout    time.Duration
}

// failure is an error of a command that ran (exit 1); every other error
// Execute returns is about the command line (exit 2).
type failure struct{ err error }

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// usageError is a command-line mistake a verb finds itself (a flag value
// out of range): exit 2, like cobra's own.
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

// badUsage returns a usageError.
func badUsage(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// action turns a verb's error into a failure, so run can tell it from
// command-line errors (cobra's, and usageError).
func action(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		var u *usageError
		if err == nil || errors.As(err, &u) {
			return err
		}
		return &failure{err}
	}
}

// run executes one command line and returns the process's exit code.
func run(ctx context.Context, args []string, sio stdio) int {
	g := &globals{}
	root := newRoot(g, sio)
	root.SetArgs(goStyleFlags(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var f *failure
	if errors.As(err, &f) {
		for line := range strings.SplitSeq(strings.TrimRight(f.Error(), "\n"), "\n") {
			fmt.Fprintf(sio.err, "hostloom: %s\n", line)
		}
		return exitError
	}
	if cmd == nil {
		cmd = root
	}
	fmt.Fprintf(sio.err, "hostloom: %s\n\n%s", strings.TrimRight(err.Error(), "\n"), cmd.UsageString())
	return exitUsage
}

// newRoot builds the command tree.
func newRoot(g *globals, sio stdio) *cobra.Command {
	root := &cobra.Command{
		Use:   "hostloom",
		Short: "See and steer HostLoom leader elections and jobs",
		Long: `hostloom shows who leads each role of a HostLoom namespace, follows
handovers as they happen, asks a leader to step down, and reads and steers
the exclusive scheduler's jobs. It reads the same configuration as the
service (the YAML file given with --config or HOSTLOOM_CONFIG, then
HOSTLOOM_* environment variables) and talks to the same server, whichever
backend locking.provider names (redis, postgres, etcd).

--namespace reads another namespace than the configuration's
(locking.namespace). -o json or -o yaml writes one document for scripts
(--json is -o json), -o wide adds columns to the tables.

Exit codes: 0 success, 1 the command failed (server unreachable, no such
role, ...), 2 the command line is wrong (unknown verb or flag). A listing
that finds nothing (status, jobs over an empty namespace) is a success:
it says which namespace it read, and its JSON lists nothing.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return g.resolveOutput()
		},
	}
	root.SetIn(sio.in)
	root.SetOut(sio.out)
	root.SetErr(sio.err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })

	pf := root.PersistentFlags()
	pf.StringVarP(&g.configPath, "config", "c", "", "YAML configuration file, the one the service reads (default $HOSTLOOM_CONFIG; none: HOSTLOOM_* environment only)")
	pf.BoolVar(&g.json, "json", false, "write JSON for scripts instead of tables (the same as -o json)")
	pf.StringVarP(&g.output, "output", "o", "", "output format: json or yaml for scripts, wide for tables with more columns (default a table)")
	pf.StringVar(&g.namespace, "namespace", "", "lock namespace to read, instead of the configuration's locking.namespace")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats, cobra.ShellCompDirectiveNoFileComp))
	pf.DurationVar(&g.timeout, "timeout", 0, "bound on connecting and on each request (default the backend's own: locking.<provider>.dial_timeout, or the PostgreSQL DSN's connect_timeout)")

	root.AddCommand(
		newStatus(g, sio),
		newWatch(g, sio),
		newResign(g, sio),
		newHandOver(g, sio),
		newRelease(g, sio),
		newJobs(g, sio),
		newHistory(g, sio),
		newPause(g, sio, true),
		newPause(g, sio, false),
		newDashboard(g, sio),
		newVersion(g, sio),
	)
	return root
}

// goStyleFlags accepts the single-dash long flags of Go's flag package
// (-config app.yaml, -json), as the service's own command line does:
// pflag reads "-config" as the shorthand cluster -c -o -n -f -i -g, so a
// single-dash word naming a long flag of the command tree is rewritten to
// its double-dash form. Nothing after "--" is touched.
func goStyleFlags(root *cobra.Command, args []string) []string {
	long := map[string]bool{}
	var collect func(c *cobra.Command)
	collect = func(c *cobra.Command) {
		mark := func(f *pflag.Flag) { long[f.Name] = true }
		c.LocalFlags().VisitAll(mark)
		c.PersistentFlags().VisitAll(mark)
		for _, s := range c.Commands() {
			collect(s)
		}
	}
	collect(root)
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 && long[name] {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

// exactArgs is cobra.ExactArgs with names in the message.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return fmt.Errorf("want %d argument(s) %s, got %d", len(names), strings.Join(names, " "), len(args))
		}
		for i, a := range args {
			if a == "" {
				return fmt.Errorf("%s must not be empty", names[i])
			}
		}
		return nil
	}
}
