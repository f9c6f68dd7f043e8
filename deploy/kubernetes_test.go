package deploy_test

import (
	"bytes"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// objects are the decoded manifests, by kind.
type objects struct {
	statefulSets    []*appsv1.StatefulSet
	deployments     []*appsv1.Deployment
	services        []*corev1.Service
	configMaps      []*corev1.ConfigMap
	secrets         []*corev1.Secret
	pdbs            []*policyv1.PodDisruptionBudget
	networkPolicies []*networkingv1.NetworkPolicy
	serviceMonitors []*monitoringv1.ServiceMonitor
}

// decode decodes one manifest strictly into its Kubernetes API type: a
// field the type does not have (a typo, an indentation slip) is refused, as
// the API server's strict field validation would.
func (o *objects) decode(raw []byte) error {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(raw, &head); err != nil {
		return err
	}
	strict := func(v any) error { return yaml.UnmarshalStrict(raw, v) }
	var err error
	switch head.APIVersion + " " + head.Kind {
	case "apps/v1 StatefulSet":
		v := &appsv1.StatefulSet{}
		err, o.statefulSets = strict(v), append(o.statefulSets, v)
	case "apps/v1 Deployment":
		v := &appsv1.Deployment{}
		err, o.deployments = strict(v), append(o.deployments, v)
	case "v1 Service":
		v := &corev1.Service{}
		err, o.services = strict(v), append(o.services, v)
	case "v1 ConfigMap":
		v := &corev1.ConfigMap{}
		err, o.configMaps = strict(v), append(o.configMaps, v)
	case "v1 Secret":
		v := &corev1.Secret{}
		err, o.secrets = strict(v), append(o.secrets, v)
	case "policy/v1 PodDisruptionBudget":
		v := &policyv1.PodDisruptionBudget{}
		err, o.pdbs = strict(v), append(o.pdbs, v)
	case "networking.k8s.io/v1 NetworkPolicy":
		v := &networkingv1.NetworkPolicy{}
		err, o.networkPolicies = strict(v), append(o.networkPolicies, v)
	case "monitoring.coreos.com/v1 ServiceMonitor":
		v := &monitoringv1.ServiceMonitor{}
		err, o.serviceMonitors = strict(v), append(o.serviceMonitors, v)
	default:
		return &unknownKind{head.APIVersion, head.Kind}
	}
	return err
}

type unknownKind struct{ apiVersion, kind string }

func (u *unknownKind) Error() string {
	return "no API type known for " + u.apiVersion + " " + u.kind + ": add it to the test"
}

// Every file under kubernetes/ decodes strictly: the manifests into their
// API types, the kustomizations into kustomize's.
func TestManifestsDecodeStrictly(t *testing.T) {
	files, err := filepath.Glob("kubernetes/*/*.yaml")
	if err != nil || len(files) < 8 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	for _, f := range files {
		raw := mustRead(t, f)
		if filepath.Base(f) == "kustomization.yaml" {
			var k types.Kustomization
			if err := yaml.UnmarshalStrict(raw, &k); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			continue
		}
		var o objects
		for i, doc := range bytes.Split(raw, []byte("\n---")) {
			if err := o.decode(doc); err != nil {
				t.Errorf("%s, document %d: %v", f, i+1, err)
			}
		}
	}
	// The strictness is real: a misspelt field is refused.
	var o objects
	bad := mustRead(t, "kubernetes/base/poddisruptionbudget.yaml")
	bad = bytes.Replace(bad, []byte("maxUnavailable"), []byte("maxUnavailabel"), 1)
	if err := o.decode(bad); err == nil {
		t.Error("a PodDisruptionBudget with a misspelt field decodes")
	}
}

// render builds the example overlay with the kustomize API, as
// `kubectl apply -k` would, and decodes every object strictly.
func render(t *testing.T) *objects {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "kubernetes/example")
	if err != nil {
		t.Fatalf("kustomize build kubernetes/example: %v", err)
	}
	o := &objects{}
	for _, r := range m.Resources() {
		raw, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		if err := o.decode(raw); err != nil {
			t.Errorf("%s %s: %v", r.GetKind(), r.GetName(), err)
		}
	}
	if len(o.statefulSets) != 1 {
		t.Fatalf("%d StatefulSets rendered, want 1", len(o.statefulSets))
	}
	return o
}

func (o *objects) secret(name string) *corev1.Secret {
	for _, s := range o.secrets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func (o *objects) configMap(name string) *corev1.ConfigMap {
	for _, c := range o.configMaps {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// proxy returns the StatefulSet's proxy container and the configuration
// the service's own parser makes of its command line, with the Secret's
// files and the ConfigMap's variables the pod would have.
func (o *objects) proxy(t *testing.T) (*appsv1.StatefulSet, *corev1.Container, map[string]string, string) {
	t.Helper()
	ss := o.statefulSets[0]
	pod := ss.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want the proxy alone", len(pod.Containers))
	}
	c := &pod.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.Value != "":
			env[e.Name] = e.Value
		case e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm := o.configMap(ref.Name)
			if cm == nil || cm.Data[ref.Key] == "" {
				t.Errorf("env %s reads ConfigMap %s key %s, which the render lacks", e.Name, ref.Name, ref.Key)
				continue
			}
			env[e.Name] = cm.Data[ref.Key]
		}
	}
	var secretDir string
	for _, m := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				secretDir = m.MountPath
			}
		}
	}
	return ss, c, env, secretDir
}

// The example overlay renders, and the objects keep what the proxy's
// guarantees rest on.
func TestKustomizationKeepsTheInvariants(t *testing.T) {
	o := render(t)
	ss, c, env, secretDir := o.proxy(t)
	pod := ss.Spec.Template.Spec

	// The secrets the command line reads are files of a mounted Secret
	// that the render holds, with every key.
	var secretName string
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			secretName = v.Secret.SecretName
		}
	}
	sec := o.secret(secretName)
	if sec == nil || secretDir == "" {
		t.Fatalf("the secrets volume (%q at %q) names no Secret of the render", secretName, secretDir)
	}
	files := secretFiles(c.Args)
	if len(files) != 5 {
		t.Errorf("%d secrets read from files, want the five (tokens, Cloudflare token, MongoDB URI, key secret): %v", len(files), files)
	}
	values := map[string]string{}
	for flag, path := range files {
		key, ok := strings.CutPrefix(path, secretDir+"/")
		if !ok || len(sec.Data[key])+len(sec.StringData[key]) == 0 {
			t.Errorf("--%s=%s: not a key of Secret %s mounted at %s", flag, path, sec.Name, secretDir)
		}
		values[key] = string(sec.Data[key]) + sec.StringData[key]
	}
	if len(env) < 2 {
		t.Errorf("the account and namespace IDs are not in the environment: %v", env)
	}
	cfg := parseArgs(t, c.Args, env, secretDir, values)
	checkGuideStep2(t, "kubernetes", cfg)

	// One journal per replica: the journal directory is a claim template's
	// volume, mounted read-write, and nothing else.
	var journal *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if m.MountPath == cfg.JournalDir {
			journal = &c.VolumeMounts[i]
		}
	}
	if cfg.JournalDir == "" || journal == nil || journal.ReadOnly {
		t.Fatalf("--journal-dir %q is not a writable mount", cfg.JournalDir)
	}
	claimed := slices.ContainsFunc(ss.Spec.VolumeClaimTemplates, func(p corev1.PersistentVolumeClaim) bool {
		return p.Name == journal.Name && slices.Contains(p.Spec.AccessModes, corev1.ReadWriteOnce)
	})
	if !claimed || slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == journal.Name }) {
		t.Errorf("the journal volume %q is not a ReadWriteOnce claim template of its own per replica", journal.Name)
	}
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas < 2 {
		t.Errorf("replicas %v: run at least two", ss.Spec.Replicas)
	}

	// The stop time covers the preStop pause, the delay, the grace and the
	// drain.
	var pause time.Duration
	if l := c.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		pause = time.Duration(l.PreStop.Sleep.Seconds) * time.Second
	}
	if pause == 0 || cfg.ShutdownDelay == 0 {
		t.Errorf("preStop pause %v and --shutdown-delay %v: both are needed for endpoints to go before the listener does", pause, cfg.ShutdownDelay)
	}
	var grace int64
	if pod.TerminationGracePeriodSeconds != nil {
		grace = *pod.TerminationGracePeriodSeconds
	}
	if time.Duration(grace)*time.Second < stopTime(pause, cfg) {
		t.Errorf("terminationGracePeriodSeconds %d does not cover %v (pause %v + delay %v + grace %v + drain %v + %v)",
			grace, stopTime(pause, cfg), pause, cfg.ShutdownDelay, cfg.Grace, cfg.Drain, stopMargin)
	}

	// Probes on the admin listener's real routes.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	adminPort := portOf(t, cfg.AdminListen)
	frontPort := portOf(t, cfg.Listen)
	if ports["admin"] != adminPort || ports["http"] != frontPort {
		t.Errorf("container ports %v, want admin %d and http %d as the flags say", ports, adminPort, frontPort)
	}
	for _, p := range []struct {
		what  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || resolve(p.probe.HTTPGet.Port, ports) != adminPort {
			t.Errorf("%s probe %+v: want GET %s on the admin port %d", p.what, p.probe, p.path, adminPort)
		}
	}
	probeRoutesAnswer(t)

	// A restricted security context, resources sized, the heap bounded.
	sc, psc := c.SecurityContext, pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want non-root with RuntimeDefault seccomp", psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
		*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container security context %+v: want a read-only root, no privilege escalation, every capability dropped", sc)
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resources %+v: want a memory request and limit", c.Resources)
	}
	checkBudget(t, "the StatefulSet", cfg, c.Resources.Limits.Memory().Value())

	// The front Service has no admin port; the admin port is reached only
	// through the headless Service Prometheus uses, and the NetworkPolicy
	// admits only Prometheus to it.
	podLabels := ss.Spec.Template.Labels
	var headless *corev1.Service
	for _, s := range o.services {
		if !selects(s.Spec.Selector, podLabels) {
			continue
		}
		admin := slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return resolve(p.TargetPort, ports) == adminPort })
		switch {
		case s.Spec.ClusterIP == corev1.ClusterIPNone:
			headless = s
		case admin || s.Spec.Type == corev1.ServiceTypeLoadBalancer || s.Spec.Type == corev1.ServiceTypeNodePort:
			t.Errorf("Service %s exposes the admin port or leaves the cluster: %+v", s.Name, s.Spec)
		}
	}
	if headless == nil || ss.Spec.ServiceName != headless.Name {
		t.Fatalf("the StatefulSet's serviceName %q is not the headless Service", ss.Spec.ServiceName)
	}
	checkNetworkPolicy(t, o, podLabels, ports, adminPort)

	// A disruption takes at most one replica at a time.
	if len(o.pdbs) != 1 || !selects(o.pdbs[0].Spec.Selector.MatchLabels, podLabels) ||
		o.pdbs[0].Spec.MaxUnavailable == nil || o.pdbs[0].Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget: want one selecting the proxy's pods with maxUnavailable 1")
	}

	// Prometheus scrapes the headless Service's admin port with the admin
	// token, as job "kvshadow-proxy".
	if len(o.serviceMonitors) != 1 {
		t.Fatalf("%d ServiceMonitors", len(o.serviceMonitors))
	}
	sm := o.serviceMonitors[0]
	if !selects(sm.Spec.Selector.MatchLabels, headless.Labels) || headless.Labels[sm.Spec.JobLabel] != "kvshadow-proxy" {
		t.Errorf("the ServiceMonitor selects %v (job from %q), not the headless Service %v as job kvshadow-proxy", sm.Spec.Selector.MatchLabels, sm.Spec.JobLabel, headless.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints: %+v", sm.Spec.Endpoints)
	}
	ep := sm.Spec.Endpoints[0]
	adminKey := strings.TrimPrefix(files["admin-token-file"], secretDir+"/")
	if ep.Port != "admin" || ep.Path != "/metrics" || ep.Authorization == nil || ep.Authorization.Credentials == nil ||
		ep.Authorization.Credentials.Name != sec.Name || ep.Authorization.Credentials.Key != adminKey {
		t.Errorf("ServiceMonitor endpoint %+v: want /metrics on port admin with Secret %s key %s", ep, sec.Name, adminKey)
	}
}

// checkNetworkPolicy: the admin port admits only traffic from pods named
// prometheus; the front port is the only one open to all.
func checkNetworkPolicy(t *testing.T, o *objects, podLabels map[string]string, ports map[string]int32, adminPort int32) {
	t.Helper()
	var found bool
	for _, np := range o.networkPolicies {
		if !selects(np.Spec.PodSelector.MatchLabels, podLabels) {
			continue
		}
		found = true
		for _, rule := range np.Spec.Ingress {
			admits := len(rule.Ports) == 0 || slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool {
				return p.Port == nil || resolve(*p.Port, ports) == adminPort
			})
			if !admits {
				continue
			}
			if len(rule.From) == 0 {
				t.Errorf("NetworkPolicy %s admits anyone to the admin port", np.Name)
			}
			for _, peer := range rule.From {
				if peer.PodSelector == nil || peer.PodSelector.MatchLabels["app.kubernetes.io/name"] != "prometheus" {
					t.Errorf("NetworkPolicy %s admits %+v to the admin port, not Prometheus alone", np.Name, peer)
				}
			}
		}
	}
	if !found {
		t.Error("no NetworkPolicy selects the proxy's pods")
	}
}

// probeRoutesAnswer runs the service (its demo, on loopback) and asks the
// routes the probes name: they exist and answer without a token.
func probeRoutesAnswer(t *testing.T) {
	t.Helper()
	s := startDemo(t)
	for _, path := range []string{"healthz", "readyz"} {
		resp, err := http.Get(s.admin + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /%s on the admin listener: %d", path, resp.StatusCode)
		}
	}
}

func portOf(t *testing.T, addr string) int32 {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	n, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("address %q has no port", addr)
	}
	return int32(n)
}

// resolve is a named or numbered port's number.
func resolve(p intstr.IntOrString, named map[string]int32) int32 {
	if p.Type == intstr.String {
		return named[p.StrVal]
	}
	return p.IntVal
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// The example's other images are pinned by version, never "latest".
func TestImagesArePinned(t *testing.T) {
	o := render(t)
	pinned := regexp.MustCompile(`:v?[0-9][^:/]*$`)
	for _, d := range o.deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			if !pinned.MatchString(c.Image) {
				t.Errorf("Deployment %s runs %s: pin a version", d.Name, c.Image)
			}
		}
	}
	if img := o.statefulSets[0].Spec.Template.Spec.Containers[0].Image; !pinned.MatchString(img) {
		t.Errorf("the proxy's image %s: the overlay pins its version", img)
	}
}
