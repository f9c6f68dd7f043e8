package mongotest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// New starts a server as Start does with the zero Config and closes it when
// the test ends; it fails the test if the server cannot start.
func New(tb testing.TB) *Server {
	tb.Helper()
	s, err := Start(tb.Context(), Config{})
	if err != nil {
		tb.Fatalf("mongotest: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("mongotest: close: %v", err)
		}
	})
	return s
}

// Database returns a fresh database name for tb and drops that database when
// the test ends.
func (s *Server) Database(tb testing.TB) string {
	tb.Helper()
	name := NewDatabaseName(tb.Name())
	tb.Cleanup(func() {
		client, err := s.Client()
		if err != nil {
			tb.Errorf("mongotest: drop %s: %v", name, err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := client.Database(name).Drop(ctx); err != nil {
			tb.Errorf("mongotest: drop %s: %v", name, err)
		}
	})
	return name
}

// Main is the TestMain of a package whose tests share one server: it starts
// the server, stores it in *srv, runs the tests, closes the server, runs
// cleanups (their errors fail the run) and exits with the tests' code (1 if
// the server cannot start or stop cleanly).
func Main(m *testing.M, srv **Server, cleanups ...func() error) {
	s, err := Start(context.Background(), Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*srv = s
	code := m.Run()
	errs := []error{s.Close()}
	for _, c := range cleanups {
		errs = append(errs, c())
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}
