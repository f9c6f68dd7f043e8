package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kvshadow/kvshadow/backends/mongokv"
	"github.com/kvshadow/kvshadow/control"
	"github.com/kvshadow/kvshadow/tests/command"
)

// The rehearsal runs the guide's own commands: every admin call and
// shadow-report run of a command block of docs/bot-guide.md is in the plan,
// as written, and the plan runs nothing the guide does not give, under the
// step number and title the guide gives them. (The deployment commands,
// wrangler and kvshadow-proxy's flags, are the machine's: the rehearsal
// replaces them with miniflare and an in-process proxy on loopback.)
func TestPlanFollowsTheGuide(t *testing.T) {
	raw, err := os.ReadFile("../../docs/bot-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`^## ([0-9]+)\. (.+)$`)
	titles := map[int]string{}
	var guide []string // "step: command"
	step, inBlock := 0, false
	for line := range strings.SplitSeq(string(raw), "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			step, _ = strconv.Atoi(m[1])
			titles[step] = m[2]
		}
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		cmd, _, _ := strings.Cut(line, " #")
		cmd = strings.TrimSpace(cmd)
		if strings.HasPrefix(cmd, "adm -X") || strings.HasPrefix(cmd, "shadow-report ") {
			guide = append(guide, strconv.Itoa(step)+": "+cmd)
		}
	}
	if len(guide) < 8 {
		t.Fatalf("only %d commands found in the guide: %v", len(guide), guide)
	}
	var rehearsed []string
	for _, s := range plan {
		if title, ok := titles[s.guide]; !ok || !strings.HasPrefix(s.name, title) {
			t.Errorf("plan step %d %q: the guide's step %d is %q", s.guide, s.name, s.guide, title)
		}
		for _, c := range s.commands {
			rehearsed = append(rehearsed, strconv.Itoa(s.guide)+": "+c)
		}
	}
	for _, c := range guide {
		if !slices.Contains(rehearsed, c) {
			t.Errorf("the guide's command %q is not rehearsed", c)
		}
	}
	for _, c := range rehearsed {
		if !slices.Contains(guide, c) && !isWayBack(c) {
			t.Errorf("the rehearsal runs %q, which the guide does not give", c)
		}
	}
}

// isWayBack: the way back from live is the guide's Back line of step 10,
// the moves of steps 9 and 7 in reverse.
func isWayBack(c string) bool {
	return c == `10: adm -X PUT $ADMIN/stage -d '{"stage":"handover"}'` || c == `10: adm -X PUT $ADMIN/stage -d '{"stage":"shadow"}'`
}

// Step 14's cleanup drops what the guide lists, and the rehearsal drops the
// same list (and then finds no collection of kvshadow's left).
func TestCleanupFollowsTheGuide(t *testing.T) {
	raw, err := os.ReadFile("../../docs/bot-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^\s*\[("kvshadow\.[a-z]+"(?:, )?)+\]\.forEach`).FindString(string(raw))
	if line == "" {
		t.Fatal("the guide's step 14 gives no drop line")
	}
	var listed []string
	for _, m := range regexp.MustCompile(`"(kvshadow\.[a-z]+)"`).FindAllStringSubmatch(line, -1) {
		listed = append(listed, m[1])
	}
	if !slices.Equal(listed, cleanup) {
		t.Errorf("the guide drops %v, the rehearsal %v", listed, cleanup)
	}
	// Every collection of kvshadow's own that the code names is dropped,
	// or dropped once empty as the guide says.
	for _, c := range []string{control.ControlCollection, control.InstancesCollection, control.ReportsCollection, control.OverflowsCollection,
		mongokv.DefaultCollection, mongokv.ChunkCollection, mongokv.GenerationCollection} {
		if !slices.Contains(cleanup, c) && !slices.Contains(dropWhenEmpty, c) {
			t.Errorf("the cleanup leaves %s", c)
		}
		if !strings.Contains(string(raw), "`"+c+"`") && !strings.Contains(line, `"`+c+`"`) {
			t.Errorf("the guide's step 14 does not name %s", c)
		}
	}
}

// make rehearse, shortened (a few updates a step, a 4 s fence), through
// every step: from the bot's own dual write and its retry queue, through
// the recommended end state (the bot on the proxy through kvshadowBinding),
// to the bot reading every key it wrote from its own MongoDB store, with the proxy
// stopped and kvshadow's collections dropped; its reports kept where it
// says.
func TestRehearsalReachesStep14(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	err := run(t.Context(), []string{"-workers", "../../workers", "-dir", dir, "-updates", "12", "-fence", "4s"}, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"the bot's retry queue holds", "through kvshadowBinding and the proxy, reads every key", "step 13, ", "reads every key it wrote", "kvshadow-proxy stopped", "step 14, ", "\nOK: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the rehearsal never said %q\n%s", want, out.String())
		}
	}
	for _, f := range reportFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("report %s not kept: %v", f, err)
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"-help"}, &out); err != nil || !strings.Contains(out.String(), "-fence") {
		t.Fatalf("-help: %v\n%s", err, out.String())
	}
}

// A usage mistake is one (exit 2, as for every command), not a failed rehearsal.
func TestUsageMistakes(t *testing.T) {
	for _, args := range [][]string{{"-bogus"}, {"-updates", "2"}} {
		var out strings.Builder
		if err := run(t.Context(), args, &out); !errors.Is(err, command.ErrUsage) {
			t.Errorf("rehearse %v: %v, want a usage error", args, err)
		}
	}
}
