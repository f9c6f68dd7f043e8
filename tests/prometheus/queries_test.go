package prometheus_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// query is one target of one dashboard panel.
type query struct{ panel, expr string }

// dashboardQueries reads every panel's targets (rows' nested panels
// included) and the Service variable's query, with Grafana's variables
// replaced as Grafana would for the last 10 minutes at a 1 s scrape.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	var dash struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(read(t, "../../deploy/grafana/kvshadow-dashboard.json"), &dash); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$job", job, "$__rate_interval", "15s", "$__range", "10m", "$__interval", "1s")
	var out []query
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out = append(out, query{p.Title, vars.Replace(tg.Expr)})
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		// label_values(metric, label): the series that offer the label.
		if inner, ok := strings.CutPrefix(v.Definition, "label_values("); ok {
			metric, label, _ := strings.Cut(strings.TrimSuffix(inner, ")"), ",")
			out = append(out, query{"variable " + v.Name, "count by (" + strings.TrimSpace(label) + ") (" + metric + `{job="` + job + `"})`})
		}
	}
	if len(out) < 30 {
		t.Fatalf("only %d queries in the dashboard", len(out))
	}
	return out
}

type panel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

// boolify turns each comparison of a PromQL expression into a bool
// comparison (x > 0 into x > bool 0), outside label matchers and strings:
// the expression then returns its series whether or not the alert fires.
func boolify(expr string) string {
	var b strings.Builder
	depth, quote := 0, rune(0)
	rs := []rune(expr)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		b.WriteRune(r)
		switch {
		case quote != 0:
			if r == '\\' && i+1 < len(rs) {
				i++
				b.WriteRune(rs[i])
			} else if r == quote {
				quote = 0
			}
			continue
		case r == '"' || r == '\'' || r == '`':
			quote = r
			continue
		case r == '{':
			depth++
			continue
		case r == '}':
			depth--
			continue
		}
		if depth > 0 || !strings.ContainsRune("=!<>", r) {
			continue
		}
		next := rune(0)
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		if next == '=' {
			i++
			b.WriteRune(next)
		} else if r == '=' || r == '!' {
			continue // not a comparison (=~ and !~ live in matchers)
		}
		if !strings.HasPrefix(strings.TrimSpace(string(rs[i+1:])), "bool") {
			b.WriteString(" bool")
		}
	}
	return b.String()
}

func TestBoolify(t *testing.T) {
	for in, want := range map[string]string{
		`up{job="a"} == 0`: `up{job="a"} == bool 0`,
		`max(x{a!="b",c=~"d|e"}) > 0.9 or sum(increase(y[5m])) > 0`: `max(x{a!="b",c=~"d|e"}) > bool 0.9 or sum(increase(y[5m])) > bool 0`,
		`a < on (job) group_left () b`:                              `a < bool on (job) group_left () b`,
		`a >= 1 and b <= 2 and c != 3`:                              `a >= bool 1 and b <= bool 2 and c != bool 3`,
		`x{l="a>b"} > bool 1`:                                       `x{l="a>b"} > bool 1`,
	} {
		if got := boolify(in); got != want {
			t.Errorf("boolify(%s) = %s, want %s", in, got, want)
		}
	}
}
