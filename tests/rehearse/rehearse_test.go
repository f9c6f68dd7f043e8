package main

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
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
