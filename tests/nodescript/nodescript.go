package nodescript

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Script is a running script.
type Script struct {
	// Name is the script's file name, for messages.
	Name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	exited chan struct{}
	err    error // how it exited, once exited is closed
}

// Start runs workers/test/support/<script> in the package folder workers
// (its node_modules must hold deps), with env added to the process's own,
// its standard error passed through, until ctx ends or Stop.
func Start(ctx context.Context, workers, script string, env []string, deps ...string) (*Script, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node is not on PATH: the Workers run in miniflare under Node")
	}
	for _, dep := range deps {
		if _, err := os.Stat(filepath.Join(workers, "node_modules", dep)); err != nil {
			return nil, fmt.Errorf("%s is not installed: run `npm ci` in %s (make does)", dep, workers)
		}
	}
	cmd := exec.CommandContext(ctx, node, filepath.Join("test", "support", script))
	cmd.Dir = workers
	return Run(script, cmd, env...)
}

// Run starts cmd as a Script named name, with env added to the process's
// own and its standard error passed through: any program that speaks lines
// on its standard input and output as the scripts do, the test binary run
// as a child of its own benchmark too.
func Run(name string, cmd *exec.Cmd, env ...string) (*Script, error) {
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Script{Name: name, cmd: cmd, stdin: stdin, lines: make(chan string, 4), exited: make(chan struct{})}
	go func() { s.err = cmd.Wait(); close(s.exited) }()
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	return s, nil
}

// Next is the script's next line, or an error if it exits or says nothing
// within d.
func (s *Script) Next(d time.Duration) (string, error) {
	select {
	case l, ok := <-s.lines:
		if !ok {
			return "", fmt.Errorf("%s exited", s.Name)
		}
		return l, nil
	case <-time.After(d):
		return "", fmt.Errorf("%s said nothing within %s", s.Name, d)
	}
}

// Say writes one line to the script.
func (s *Script) Say(line string) error {
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	return nil
}

// Stop is End, for a cleanup.
func (s *Script) Stop() { _ = s.End() }

// End closes the script's standard input, which ends it, waits for it to
// exit (after 10 s it is killed) and returns how it exited.
func (s *Script) End() error {
	_ = s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	return s.err
}
