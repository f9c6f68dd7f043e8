package deploy_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/kvshadow/kvshadow/dualwrite"
	"github.com/kvshadow/kvshadow/service"
)

// guideStep2 is the command line of the bot team's guide, step 2 ("the
// essential flags"): each flag with its value.
func guideStep2(t *testing.T) map[string]string {
	t.Helper()
	guide := string(mustRead(t, "../docs/bot-guide.md"))
	_, step, ok := strings.Cut(guide, "## 2. Deploy the proxy")
	step, _, _ = strings.Cut(step, "\n## ")
	block := regexp.MustCompile("(?s)```sh\n(kvshadow-proxy .*?)```").FindStringSubmatch(step)
	if !ok || block == nil {
		t.Fatal("docs/bot-guide.md: no kvshadow-proxy command in step 2")
	}
	fields := strings.Fields(strings.ReplaceAll(block[1], "\\\n", " "))[1:]
	flags := map[string]string{}
	for i := 0; i < len(fields); i++ {
		name, value, eq := strings.Cut(strings.TrimLeft(fields[i], "-"), "=")
		if !eq && i+1 < len(fields) && !strings.HasPrefix(fields[i+1], "--") {
			i++
			value = fields[i]
		}
		flags[name] = strings.Trim(value, `"`)
	}
	return flags
}

// checkGuideStep2 holds a deployment form's configuration (as the service's
// own parser made it) to the guide's step 2: the same stage and exclusions,
// and a value for each setting the guide says each replica needs. A flag
// the guide gains and this test does not know fails it, so that the forms
// and the guide stay in step.
func checkGuideStep2(t *testing.T, form string, cfg *service.Config) {
	t.Helper()
	for name, value := range guideStep2(t) {
		var ok bool
		switch name {
		case "stage":
			want, err := dualwrite.ParseStage(value)
			ok = err == nil && cfg.Store.Stage == want
		case "exclude-prefix":
			ok = slices.Contains(cfg.Store.ExcludePrefixes, value)
		case "primary-url":
			ok = cfg.PrimaryURL != ""
		case "journal-dir":
			ok = cfg.JournalDir != ""
		case "namespace":
			ok = len(cfg.Namespaces) > 0
		case "listen", "admin-listen", "public-url":
			// Each form's own: its ports, its tunnel or TLS (the guide's
			// step 3); the Kubernetes example sets --public-url.
			ok = true
		default:
			t.Errorf("the guide's step 2 gives --%s, which this test does not check in the deployment forms: add it to every form and here", name)
			continue
		}
		if !ok {
			t.Errorf("%s: the guide's step 2 gives --%s %s; the form's configuration has stage %s, exclusions %v, primary %q, journal %q",
				form, name, value, cfg.Store.Stage, cfg.Store.ExcludePrefixes, cfg.PrimaryURL, cfg.JournalDir)
		}
	}
}

// The guide's step 2 names what every form must set: the stage, the
// primary (the bridge) and the bot's retry queue left out.
func TestGuideStep2NamesTheEssentials(t *testing.T) {
	flags := guideStep2(t)
	for _, name := range []string{"stage", "primary-url", "exclude-prefix", "journal-dir"} {
		if flags[name] == "" {
			t.Errorf("the guide's step 2 lacks --%s: %v", name, flags)
		}
	}
	if flags["stage"] != "dualwrite" || flags["exclude-prefix"] != "__retry:" {
		t.Errorf("the guide's step 2: --stage %q --exclude-prefix %q, want dualwrite and __retry:", flags["stage"], flags["exclude-prefix"])
	}
}

// The base needs nothing but Kubernetes: the ServiceMonitor, which needs
// the Prometheus Operator's CRD, is an optional component.
func TestKubernetesBaseNeedsNoOperator(t *testing.T) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "kubernetes/base")
	if err != nil {
		t.Fatalf("kustomize build kubernetes/base: %v", err)
	}
	for _, r := range m.Resources() {
		if r.GetKind() == "ServiceMonitor" || strings.HasPrefix(r.GetApiVersion(), "monitoring.coreos.com/") {
			t.Errorf("the base renders %s %s, which needs the Prometheus Operator", r.GetKind(), r.GetName())
		}
	}
	raw := string(mustRead(t, "kubernetes/example/kustomization.yaml"))
	if !strings.Contains(raw, "../components/servicemonitor") || !strings.Contains(raw, "Optional") {
		t.Error("the example overlay does not take the ServiceMonitor as an optional component, said so")
	}
}

// The runbook runs the image by the name make image gives it, and names one
// way to get it where each target runs it: podman's storage, Docker, a
// registry for Kubernetes.
func TestRunbookRunsTheImageMakeBuilds(t *testing.T) {
	makefile := string(mustRead(t, "../Makefile"))
	m := regexp.MustCompile(`(?m)^IMAGE \?= (\S+)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile names no IMAGE")
	}
	runbook := string(mustRead(t, "../docs/runbook.md"))
	_, deploy, _ := strings.Cut(runbook, "\n## Deploy\n")
	deploy, _, _ = strings.Cut(deploy, "\n## ")
	deploy = strings.Join(strings.Fields(deploy), " ") // lines wrap anywhere
	for _, want := range []string{
		"podman run ", m[1] + ":<version>", // the name make image gives it
		"podman save " + m[1] + ":<version> | docker load", // Docker
		"podman push " + m[1] + ":<version> ",              // a registry, for Kubernetes
	} {
		if !strings.Contains(deploy, want) {
			t.Errorf("the runbook's Deploy section lacks %q", want)
		}
	}
	if strings.Contains(makefile, "STORAGE := --storage-driver vfs") {
		t.Error("make image builds into vfs storage whatever podman uses: podman run would not find it")
	}
}
