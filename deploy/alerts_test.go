package deploy_test

import (
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// ruleFile is Prometheus's rule file format, decoded strictly.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func alertRules(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	if err := yaml.UnmarshalStrict(mustRead(t, "prometheus/kvshadow-alerts.yml"), &f); err != nil {
		t.Fatalf("kvshadow-alerts.yml: %v", err)
	}
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// Every alert says what to do and links a section of the runbook that
// exists; its promtool unit tests make it fire and keep it quiet.
func TestEveryAlertSaysWhatToDo(t *testing.T) {
	rules := alertRules(t)
	if len(rules) < 12 {
		t.Fatalf("%d alert rules", len(rules))
	}
	runbook := string(mustRead(t, "../docs/runbook.md"))
	anchors := map[string]bool{}
	for _, h := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(runbook, -1) {
		anchors[githubAnchor(h[1])] = true
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(mustRead(t, "prometheus/kvshadow-alerts.test.yml"), &tests); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	for _, r := range rules {
		if !strings.HasPrefix(r.Alert, "KVShadow") || r.Expr == "" {
			t.Errorf("rule %+v", r)
		}
		if r.Annotations["summary"] == "" || len(r.Annotations["description"]) < 60 || r.Labels["severity"] == "" {
			t.Errorf("%s: want a summary, a description of what to do and a severity", r.Alert)
		}
		url := r.Annotations["runbook_url"]
		page, anchor, _ := strings.Cut(url, "#")
		if !strings.HasSuffix(page, "/docs/runbook.md") || !anchors[anchor] || anchor != strings.ToLower(r.Alert) {
			t.Errorf("%s: runbook_url %q names no section of docs/runbook.md called %s", r.Alert, url, r.Alert)
		}
		if !fires[r.Alert] || !quiet[r.Alert] {
			t.Errorf("%s: kvshadow-alerts.test.yml makes it fire %v and stay quiet %v: want both", r.Alert, fires[r.Alert], quiet[r.Alert])
		}
	}
}

// githubAnchor is the anchor GitHub gives a heading.
func githubAnchor(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = regexp.MustCompile("[^a-z0-9 _-]").ReplaceAllString(h, "")
	return strings.ReplaceAll(h, " ", "-")
}
