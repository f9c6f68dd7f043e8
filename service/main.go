package service

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit statuses of the command.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// Main parses args and the environment and runs the service: the command's
// whole behaviour, testable. --help prints the manual on stdout.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := Parse(args, getenv)
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, werr := io.WriteString(stdout, Help)
		return werr
	case err != nil:
		fmt.Fprintf(stderr, "kvshadow-proxy: %v\nRun kvshadow-proxy --help for the flags and variables.\n", err)
		return err
	}
	if err := Run(ctx, c, stdout, stderr, func(o *runOptions) { o.processLimit = true }); err != nil {
		for line := range strings.SplitSeq(err.Error(), "\n") { // a settingsError's lines
			fmt.Fprintf(stderr, "kvshadow-proxy: %s\n", line)
		}
		return err
	}
	return nil
}

// ExitCode maps Main's error to the exit status.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrUsage):
		return ExitUsage
	}
	return ExitError
}
