package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

const stream = `{"Time":"2026-12-01T10:00:00Z","Action":"start","Package":"github.com/kvshadow/kvshadow/tests/report"}
{"Time":"2026-12-01T10:00:01Z","Action":"run","Package":"github.com/kvshadow/kvshadow/tests/report","Test":"TestSlow"}
{"Time":"2026-12-01T10:00:01Z","Action":"run","Package":"github.com/kvshadow/kvshadow/tests/report","Test":"TestBroken"}
{"Time":"2026-12-01T10:00:02Z","Action":"output","Package":"github.com/kvshadow/kvshadow/tests/report","Test":"TestBroken","Output":"    x_test.go:9: wrong answer\n"}
{"Time":"2026-12-01T10:00:02Z","Action":"fail","Package":"github.com/kvshadow/kvshadow/tests/report","Test":"TestBroken","Elapsed":1}
{"Time":"2026-12-01T10:00:40Z","Action":"output","Package":"github.com/kvshadow/kvshadow/tests/report","Test":"TestSlow","Output":"quiet\n"}
{"Time":"2026-12-01T10:00:45Z","Action":"pass","Package":"github.com/kvshadow/kvshadow/tests/report","Test":"TestSlow","Elapsed":44}
{"Time":"2026-12-01T10:00:45Z","Action":"fail","Package":"github.com/kvshadow/kvshadow/tests/report","Elapsed":45}
{"ImportPath":"github.com/kvshadow/kvshadow/broken","Action":"build-output","Output":"broken/x.go:3:1: syntax error\n"}
{"ImportPath":"github.com/kvshadow/kvshadow/broken","Action":"build-fail"}
# github.com/kvshadow/kvshadow/broken [build failed]
`

// feed sends the stream's lines one at a time, and a tick after the line
// that holds "quiet"; the handoffs are unbuffered, so each line is handled
// before the next is sent.
func feed(stream string, tickAt time.Time) (string, bool) {
	lines := make(chan []byte)
	ticks := make(chan time.Time)
	var out bytes.Buffer
	done := make(chan bool)
	go func() { done <- run(lines, ticks, &out) }()
	for _, l := range strings.Split(strings.TrimSuffix(stream, "\n"), "\n") {
		lines <- []byte(l)
		if strings.Contains(l, "quiet") {
			ticks <- tickAt
		}
	}
	close(lines)
	failed := <-done
	return out.String(), failed
}

func TestSaysWhatRuns(t *testing.T) {
	got, failed := feed(stream, time.Date(2026, 12, 1, 10, 0, 40, 0, time.UTC))
	if !failed {
		t.Fatal("a failed test did not fail the run")
	}
	want := `  github.com/kvshadow/kvshadow/tests/report: running
    tests/report TestBroken FAILED in 1.0s:
          x_test.go:9: wrong answer
    still running: tests/report TestSlow (39s)
    tests/report TestSlow passed in 44.0s
  github.com/kvshadow/kvshadow/tests/report: FAIL (45.0s)
    broken/x.go:3:1: syntax error
# github.com/kvshadow/kvshadow/broken [build failed]
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestPassingRunSucceeds(t *testing.T) {
	in := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestQuick"}
{"Action":"pass","Package":"p","Test":"TestQuick","Elapsed":0.01}
{"Action":"pass","Package":"p","Elapsed":0.02}
`
	got, failed := feed(in, time.Time{})
	if failed || got != "  p: running\n  p: ok (0.0s)\n" {
		t.Fatalf("failed %v, out %q", failed, got)
	}
}

// A failed subtest's lines carry its own name in test2json's stream: they
// are shown with it, not lost with the parent's.
func TestShowsAFailedSubtestsLines(t *testing.T) {
	const sub = `{"Action":"run","Package":"p","Test":"TestFleet"}
{"Action":"run","Package":"p","Test":"TestFleet/three/1"}
{"Action":"output","Package":"p","Test":"TestFleet/three/1","Output":"    fleet_test.go:123: 1 false confirmation\n"}
{"Action":"fail","Package":"p","Test":"TestFleet/three/1","Elapsed":20}
{"Action":"fail","Package":"p","Test":"TestFleet","Elapsed":120}
`
	got, failed := feed(sub, time.Time{})
	if !failed || !strings.Contains(got, "TestFleet/three/1 FAILED in 20.0s:\n      "+"    fleet_test.go:123: 1 false confirmation") {
		t.Errorf("failed %v, got:\n%s", failed, got)
	}
}
