package report_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/internal/syncbuf"
	"github.com/kvshadow/kvshadow/tests/command"
)

// EnvRequireBrowser makes the browser tests fail, instead of skip, when
// chromium or chromedriver is missing; .ci/run sets it (and installs
// both), and so does any CI that sets CI (GitHub Actions, GitLab, ...).
const EnvRequireBrowser = "KVSHADOW_REQUIRE_BROWSER"

// EnvScreenshots names a directory where the browser tests leave a
// screenshot of each page at each width, to look at.
const EnvScreenshots = "KVSHADOW_SCREENSHOTS"

// The widths the HTML report is checked at: a wide monitor, a laptop, a
// phone.
var widths = []int{1920, 1400, 420}

// TestHTMLReportInChromium opens shadow-report's HTML page, from a scan and
// from an applied repair of the rig's stores, in headless Chromium at each
// width, and measures it: the counts table's key columns (PARITY, ERRORS,
// EXPIRED) stay on the first screen with no horizontal scrollbar, the page
// never scrolls sideways, the keys table's headers align with their cells,
// and no key breaks one character a line. The charts have a visible
// scale: one key that differs among the 35 of module xo is a sliver of its
// bar, not a full one, and the axis's end is printed on the screen; every
// colour drawn is in the legend; the requests table fits a phone.
func TestHTMLReportInChromium(t *testing.T) {
	wd := startChromeDriver(t)
	r := newRig(t)
	r.seed(t, append(divergences(), oneIn35()...))
	dir := t.TempDir()
	// The scans first: the repair changes the stores. Module xo alone is
	// where a scale of key counts would draw its one key as a full bar.
	for _, page := range []struct {
		name  string
		extra []string
	}{{"scan", nil}, {"xo", []string{"--module", "xo"}}, {"repair", []string{"--repair", "--apply"}}} {
		name, extra := page.name, page.extra
		path := filepath.Join(dir, name+".html")
		args := append([]string{"--format", "html", "--out", path, "--keys", "plain"}, extra...)
		if res := r.run(t, context.Background(), args...); res.code == 2 {
			t.Fatalf("%s: exit %d\n%s", name, res.code, res.stderr)
		}
		for _, w := range widths {
			t.Run(fmt.Sprintf("%s/%dpx", name, w), func(t *testing.T) {
				m := wd.measure(t, "file://"+path, w)
				checkLayout(t, m, w)
				if shots := os.Getenv(EnvScreenshots); shots != "" {
					wd.screenshot(t, filepath.Join(shots, fmt.Sprintf("%s-%d.png", name, w)))
				}
			})
		}
	}
}

// oneIn35 is a module of 35 keys of which one differs.
func oneIn35() []spec {
	var specs []spec
	for i := range 35 {
		k, v := fmt.Sprintf("xo:game:%02d", i), fmt.Sprintf(`{"board":%d}`, i)
		sv := v
		if i == 7 {
			sv = `{"board":-1}`
		}
		specs = append(specs, spec{key: k, pv: v, sv: sv})
	}
	return specs
}

// layout is what the page's script measures.
type layout struct {
	Viewport    float64            `json:"viewport"`
	PageScroll  float64            `json:"pageScroll"`
	Columns     map[string]rect    `json:"columns"`
	TableScroll float64            `json:"tableScroll"`
	TableClient float64            `json:"tableClient"`
	Keys        []keyCell          `json:"keys"`
	HeadShown   bool               `json:"headShown"`
	Align       [][2]string        `json:"align"`
	Charts      map[string]float64 `json:"charts"`
	// OneIn35 is the share of its track that module xo's bar fills.
	OneIn35 float64 `json:"oneIn35"`
	// AxisEnds are the right edges of each axis's last label.
	AxisEnds []float64 `json:"axisEnds"`
	// Drawn are the kinds the charts colour; Legend those the legend
	// explains, each with its swatch's colour.
	Drawn         []string          `json:"drawn"`
	Legend        map[string]string `json:"legend"`
	Colours       map[string]string `json:"colours"`
	RequestScroll float64           `json:"requestScroll"`
	RequestClient float64           `json:"requestClient"`
}

type rect struct {
	Left, Right, Width float64
}

type keyCell struct {
	Width, Height, Line float64
	Text                string
}

const measureScript = `
const q = s => document.querySelector(s);
const box = e => { const b = e.getBoundingClientRect(); return {Left: b.left, Right: b.right, Width: b.width}; };
const cols = {};
document.querySelectorAll('#modules thead th').forEach(th => { cols[th.textContent.trim().toUpperCase()] = box(th); });
const scroller = q('#modules').parentElement;
const keys = [...document.querySelectorAll('#divergences td.key')].map(e => {
  const b = e.getBoundingClientRect();
  return {Width: b.width, Height: b.height, Line: parseFloat(getComputedStyle(e).lineHeight), Text: e.textContent};
});
const head = q('#divergences thead');
const first = q('#divergences tbody tr');
const align = [...head.querySelectorAll('th')].map((th, i) =>
  [getComputedStyle(th).textAlign, getComputedStyle(first.children[i]).textAlign]);
const charts = {};
document.querySelectorAll('.chart').forEach(c => { charts[c.id] = c.getBoundingClientRect().right; });
const xo = q('#modules-chart .bar-row.module[data-module="xo"] .bar-track');
const oneIn35 = xo ? [...xo.children].reduce((w, s) => w + s.getBoundingClientRect().width, 0) / xo.getBoundingClientRect().width : -1;
const axisEnds = [...document.querySelectorAll('.axis-track span:last-child')].map(e => e.getBoundingClientRect().right);
const colours = {}, drawn = new Set();
document.querySelectorAll('.bar-track span').forEach(e => {
  const k = [...e.classList].find(c => c.startsWith('k-'));
  if (k) { drawn.add(k.slice(2)); colours[k.slice(2)] = getComputedStyle(e).backgroundColor; }
});
const legend = {};
document.querySelectorAll('#legend .legend-item').forEach(e => {
  const b = e.getBoundingClientRect();
  if (b.width > 0 && b.height > 0) legend[e.dataset.kind] = getComputedStyle(e.querySelector('.swatch')).backgroundColor;
});
const req = q('#requests').parentElement;
return {viewport: document.documentElement.clientWidth, pageScroll: document.documentElement.scrollWidth,
  columns: cols, tableScroll: scroller.scrollWidth, tableClient: scroller.clientWidth,
  keys, headShown: getComputedStyle(head).display !== 'none', align, charts,
  oneIn35, axisEnds, drawn: [...drawn], legend, colours, requestScroll: req.scrollWidth, requestClient: req.clientWidth};
`

func checkLayout(t *testing.T, m layout, w int) {
	t.Helper()
	if m.Viewport < float64(w)-40 || m.Viewport > float64(w) {
		t.Fatalf("viewport %.0f px for a %d px window", m.Viewport, w)
	}
	if m.PageScroll > m.Viewport {
		t.Errorf("the page scrolls sideways: %.0f px wide in %.0f", m.PageScroll, m.Viewport)
	}
	for _, name := range []string{"MODULE", "PARITY", "ERRORS", "EXPIRED", "COMPARED"} {
		c, ok := m.Columns[name]
		if !ok || c.Width == 0 {
			t.Errorf("column %s is not shown", name)
			continue
		}
		if c.Left < 0 || c.Right > m.Viewport {
			t.Errorf("column %s at %.0f..%.0f leaves the first screen (%.0f px)", name, c.Left, c.Right, m.Viewport)
		}
	}
	if m.TableScroll > m.TableClient+1 {
		t.Errorf("the counts table scrolls: %.0f px in %.0f", m.TableScroll, m.TableClient)
	}
	if w >= 1400 {
		for _, name := range []string{"PRIMARY", "SHADOW", "MATCH", "MISSING", "EXTRA", "VALUE", "JSON", "TTL"} {
			if c := m.Columns[name]; c.Width == 0 || c.Right > m.Viewport {
				t.Errorf("column %s is not on the first screen at %d px", name, w)
			}
		}
	}
	if m.RequestScroll > m.RequestClient+1 {
		t.Errorf("the requests table scrolls sideways: %.0f px in %.0f", m.RequestScroll, m.RequestClient)
	}
	// The scale: 1 key of 35 is 2.9% of its module, on an axis to 100%.
	if m.OneIn35 <= 0 || m.OneIn35 > 0.1 {
		t.Errorf("one key that differs of 35 fills %.0f%% of its bar", m.OneIn35*100)
	}
	if len(m.AxisEnds) == 0 {
		t.Error("no chart has an axis")
	}
	for _, right := range m.AxisEnds {
		if right > m.Viewport {
			t.Errorf("an axis's end label ends at %.0f px, past the screen", right)
		}
	}
	// The legend: every colour a chart draws is explained, with the same
	// colour.
	for _, k := range m.Drawn {
		if c, ok := m.Legend[k]; !ok || c != m.Colours[k] {
			t.Errorf("kind %s is drawn in %s but the legend shows %q", k, m.Colours[k], c)
		}
	}
	for id, right := range m.Charts {
		if right > m.Viewport {
			t.Errorf("chart %s ends at %.0f px, past the screen", id, right)
		}
	}
	if len(m.Keys) == 0 {
		t.Fatal("no key in the keys table")
	}
	for _, k := range m.Keys {
		// A key fits in a few lines of a readable width, never one
		// character a line.
		if k.Width < 100 || k.Height > 3.5*k.Line {
			t.Errorf("key %q is %.0f px wide and %.0f px tall (line %.0f px)", k.Text, k.Width, k.Height, k.Line)
		}
	}
	if m.HeadShown {
		for i, a := range m.Align {
			if a[0] != a[1] {
				t.Errorf("keys table column %d: header aligned %s over cells aligned %s", i, a[0], a[1])
			}
		}
	}
}

// webDriver is a chromedriver session, driven through the W3C WebDriver
// HTTP API.
type webDriver struct {
	base, session string
}

func startChromeDriver(t *testing.T) *webDriver {
	t.Helper()
	driver, derr := exec.LookPath("chromedriver")
	browser, berr := exec.LookPath("chromium")
	if derr != nil || berr != nil {
		msg := "chromium and chromedriver are needed (Debian: apt-get install chromium chromium-driver)"
		if os.Getenv(EnvRequireBrowser) != "" || os.Getenv("CI") != "" {
			t.Fatal(msg + "; CI must run this test, not skip it")
		}
		t.Skip(msg)
	}
	// chromedriver binds a port of its own and says which: a port picked
	// and closed could be taken before it binds, and the test would drive
	// whatever serves there.
	var logs syncbuf.Buffer
	cmd := exec.Command(driver, "--port=0", "--allowed-ips=127.0.0.1")
	at, err := command.Announced(cmd, &logs, regexp.MustCompile(`started successfully on port ([0-9]+)`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	wd := &webDriver{}
	select {
	case port := <-at:
		wd.base = "http://127.0.0.1:" + port
	case <-time.After(30 * time.Second):
		t.Fatalf("chromedriver did not say where it serves:\n%s", logs.String())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var status struct {
			Value struct{ Ready bool } `json:"value"`
		}
		if err := wd.call("GET", "/status", nil, &status); err == nil && status.Value.Ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromedriver did not start:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": browser,
			"args": []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
				"--disable-background-networking", "--disable-component-update", "--disable-sync",
				"--hide-scrollbars", "--user-data-dir=" + t.TempDir()},
		},
	}}}
	var created struct {
		Value struct {
			SessionID string `json:"sessionId"`
		} `json:"value"`
	}
	if err := wd.call("POST", "/session", caps, &created); err != nil {
		t.Fatalf("new session: %v\n%s", err, logs.String())
	}
	wd.session = "/session/" + created.Value.SessionID
	t.Cleanup(func() { _ = wd.call("DELETE", wd.session, nil, nil) })
	return wd
}

// measure loads url in a window w pixels wide and runs measureScript.
func (wd *webDriver) measure(t *testing.T, url string, w int) layout {
	t.Helper()
	if err := wd.call("POST", wd.session+"/window/rect", map[string]int{"width": w, "height": 1000}, nil); err != nil {
		t.Fatal(err)
	}
	if err := wd.call("POST", wd.session+"/url", map[string]string{"url": url}, nil); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Value layout `json:"value"`
	}
	if err := wd.call("POST", wd.session+"/execute/sync", map[string]any{"script": measureScript, "args": []any{}}, &res); err != nil {
		t.Fatal(err)
	}
	return res.Value
}

func (wd *webDriver) screenshot(t *testing.T, path string) {
	t.Helper()
	var res struct {
		Value string `json:"value"`
	}
	if err := wd.call("GET", wd.session+"/screenshot", nil, &res); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(res.Value)
	if err == nil {
		err = os.WriteFile(path, png, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (wd *webDriver) call(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, wd.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}
