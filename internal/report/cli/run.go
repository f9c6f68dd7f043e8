package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/compare"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/internal/report"
	"github.com/kvshadow/kvshadow/internal/telemetry"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/kv/otelkv"
)

// The exit codes.
const (
	ExitOK          = 0
	ExitBelowParity = 1
	ExitError       = 2
)

// ErrBelowParity is Run's error when the report is complete but its parity
// is under --min-parity.
var ErrBelowParity = errors.New("parity is below the minimum")

// ExitCode maps Run's error to the process exit code.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrBelowParity):
		return ExitBelowParity
	}
	return ExitError
}

// Run is the command: it parses args (and reads the environment through
// getenv), connects to both stores, scans, writes the report to stdout or
// --out, and returns nil, an error matching ErrBelowParity, or another
// error, which it has already explained on stderr.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	o, err := parse(args, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "shadow-report: %v\nRun shadow-report --help for the flags and examples.\n", err)
		return err
	}
	if o.help {
		_, err := io.WriteString(stdout, helpText)
		return err
	}
	err = run(ctx, o, stdout, stderr)
	if err != nil && !errors.Is(err, ErrBelowParity) {
		// One line per problem, each with the command's name.
		for line := range strings.SplitSeq(mongokv.ShortTopology(err.Error()), "\n") {
			fmt.Fprintf(stderr, "shadow-report: %s\n", line)
		}
	}
	return err
}

func run(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	stores, err := connect(ctx, o, stderr)
	if err != nil {
		return err
	}
	defer stores.close()
	tel, err := telemetry.Setup(ctx, telemetry.Config{ServiceName: "shadow-report", Console: stderr})
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tel.Shutdown(sctx)
	}()
	primary, shadow, err := instrument(stores, tel, o)
	if err != nil {
		return err
	}
	var sv *stageView
	if !o.demo {
		sv = readStage(ctx, o, stores)
	}
	auth, truth, err := decideTruth(o, sv)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "shadow-report: the truth is the %s: %s\n", auth, truth.Reason)

	cfg := o.cfg
	cfg.Primary.Store, cfg.Shadow.Store = primary, shadow
	cfg.Primary.Name, cfg.Shadow.Name = stores.names[0], stores.names[1]
	cfg.Primary.Spent = stores.spent
	cfg.Identity = stores.identity
	cfg.Repair.Authoritative = auth
	cfg.Truth = truth
	cfg.RunID = control.NewID()
	cfg.Notices = stderr
	if o.progress != "never" {
		cfg.Progress = stderr
		cfg.ProgressLines = o.progress == "lines" || o.progress == "auto" && !isTerminal(stderr)
	}
	r, err := report.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if err := write(o, r, stdout); err != nil {
		return err
	}
	if o.out != "" {
		fmt.Fprintf(stderr, "shadow-report: wrote %s\n", o.out)
	}
	record(ctx, o, sv, r, stderr)
	// The verdict goes to stderr whatever went to stdout or --out, so that
	// a log, a pipe into jq or a CI step always shows why it passed.
	v := report.Verdict(r)
	fmt.Fprintf(stderr, "shadow-report: %s\n", v)
	if !r.Passed {
		return fmt.Errorf("%w (%s)", ErrBelowParity, v)
	}
	return nil
}

// instrument wraps both stores for traces and metrics, exported as the
// OTEL_* variables say (nowhere when none is set). Span keys are always
// hashed, whatever --keys shows in the report.
func instrument(st *stores, tel *telemetry.Telemetry, o *options) (primary, shadow kv.Store, err error) {
	red, err := compare.NewRedactor(compare.KeyHMAC, o.cfg.Secret)
	if err != nil {
		return nil, nil, err
	}
	opts := []otelkv.Option{otelkv.WithTracerProvider(tel.TracerProvider), otelkv.WithMeterProvider(tel.MeterProvider)}
	shadowSystem := otelkv.SystemMongoDB
	if o.demo {
		shadowSystem = otelkv.SystemMemory
	}
	if primary, err = otelkv.New(st.primary, otelkv.Config{System: otelkv.SystemCloudflareKV, Role: otelkv.RolePrimary, Redactor: red}, opts...); err != nil {
		return nil, nil, err
	}
	if shadow, err = otelkv.New(st.shadow, otelkv.Config{System: shadowSystem, Role: otelkv.RoleShadow, Redactor: red}, opts...); err != nil {
		return nil, nil, err
	}
	return primary, shadow, nil
}

// write renders the report to stdout, or to --out.
func write(o *options, r *report.Report, stdout io.Writer) error {
	if o.out == "" {
		return report.Render(stdout, r, o.format)
	}
	return report.WriteFile(o.out, r, o.format)
}

// isTerminal reports whether w is a terminal (a character device): there
// progress is one redrawn line; in pipes, files and CI logs it is plain
// lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
