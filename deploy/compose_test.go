package deploy_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// compose is the part of the Compose specification the proxy's file uses,
// decoded strictly so that a misspelt key is refused.
type compose struct {
	Services map[string]struct {
		Image           string            `json:"image"`
		Command         []string          `json:"command"`
		Environment     map[string]string `json:"environment"`
		Secrets         []string          `json:"secrets"`
		Volumes         []string          `json:"volumes"`
		Ports           []string          `json:"ports"`
		StopGracePeriod string            `json:"stop_grace_period"`
		Restart         string            `json:"restart"`
		User            string            `json:"user"`
		ReadOnly        bool              `json:"read_only"`
		CapDrop         []string          `json:"cap_drop"`
		SecurityOpt     []string          `json:"security_opt"`
		MemLimit        string            `json:"mem_limit"`
	} `json:"services"`
	Secrets map[string]struct {
		File string `json:"file"`
	} `json:"secrets"`
	Volumes map[string]struct{} `json:"volumes"`
}

// The compose file gives the proxy its journal on a named volume, its
// secrets as files, a stop time covering the drain and the admin port on
// loopback; Prometheus gets the alert rules and the admin token.
func TestComposeKeepsTheInvariants(t *testing.T) {
	var c compose
	if err := yaml.UnmarshalStrict(mustRead(t, "docker-compose.proxy.yml"), &c); err != nil {
		t.Fatalf("docker-compose.proxy.yml: %v", err)
	}
	p, ok := c.Services["kvshadow-proxy"]
	if !ok {
		t.Fatal("no kvshadow-proxy service")
	}
	values := map[string]string{}
	files := secretFiles(p.Command)
	if len(files) != 5 {
		t.Errorf("%d secrets from files, want 5: %v", len(files), files)
	}
	for flag, path := range files {
		name, ok := strings.CutPrefix(path, "/run/secrets/")
		if !ok || !slices.Contains(p.Secrets, name) || c.Secrets[name].File == "" {
			t.Errorf("--%s=%s is not one of the service's secrets %v", flag, path, p.Secrets)
		}
		values[name] = "from-" + name
		if strings.Contains(name, "mongo") {
			values[name] = "mongodb://db.example.net:27017"
		}
	}
	interpolate := regexp.MustCompile(`\$\{[A-Z_]+(:\?[^}]*)?\}`)
	env := map[string]string{}
	for k, v := range p.Environment {
		env[k] = interpolate.ReplaceAllString(v, "0123456789abcdef0123456789abcdef")
	}
	cfg := parseArgs(t, p.Command, env, "/run/secrets", values)
	checkGuideStep2(t, "compose", cfg)

	journal := false
	for _, v := range p.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		if _, named := c.Volumes[src]; named && dst == cfg.JournalDir {
			journal = true
		}
	}
	if !journal {
		t.Errorf("--journal-dir %s is not a named volume: %v", cfg.JournalDir, p.Volumes)
	}
	stop, err := time.ParseDuration(p.StopGracePeriod)
	if err != nil || stop < stopTime(0, cfg) {
		t.Errorf("stop_grace_period %q does not cover %v", p.StopGracePeriod, stopTime(0, cfg))
	}
	admin := portOf(t, cfg.AdminListen)
	for _, port := range p.Ports {
		if strings.HasSuffix(port, ":"+itoa(admin)) && !strings.HasPrefix(port, "127.0.0.1:") {
			t.Errorf("port %s publishes the admin API beyond the VM's loopback", port)
		}
	}
	limit, err := strconv.ParseInt(strings.TrimSuffix(p.MemLimit, "g"), 10, 64)
	if err != nil {
		t.Errorf("mem_limit %q: want whole gigabytes (\"1g\")", p.MemLimit)
	}
	checkBudget(t, "the compose file", cfg, limit<<30)
	if !p.ReadOnly || p.User == "" || strings.HasPrefix(p.User, "0") || !slices.Contains(p.CapDrop, "ALL") {
		t.Errorf("the proxy runs with a writable root, as root or with capabilities: %+v", p)
	}

	prom, ok := c.Services["prometheus"]
	if !ok || !slices.ContainsFunc(prom.Volumes, func(v string) bool { return strings.Contains(v, "kvshadow-alerts.yml") }) ||
		!slices.ContainsFunc(prom.Volumes, func(v string) bool {
			return strings.HasPrefix(v, "./secrets/prometheus-admin-token:/etc/prometheus/admin-token:")
		}) {
		t.Errorf("Prometheus does not get the alert rules and the admin token: %v", prom.Volumes)
	}
}

// The Prometheus configuration beside the rules is valid (promtool check
// config, with the admin token's file where the compose file mounts it).
func TestPrometheusConfigIsValid(t *testing.T) {
	need(t, "promtool:prometheus")
	dir := t.TempDir()
	token := filepath.Join(dir, "admin-token")
	writeFile(t, token, "an-admin-token")
	conf := strings.ReplaceAll(string(mustRead(t, "prometheus/prometheus.yml")), "/etc/prometheus/admin-token", token)
	writeFile(t, filepath.Join(dir, "prometheus.yml"), conf)
	writeFile(t, filepath.Join(dir, "kvshadow-alerts.yml"), string(mustRead(t, "prometheus/kvshadow-alerts.yml")))
	if out, err := exec.Command("promtool", "check", "config", filepath.Join(dir, "prometheus.yml")).CombinedOutput(); err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}
