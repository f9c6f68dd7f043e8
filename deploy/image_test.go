package deploy_test

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/kv"
)

// ociImage is what the test reads of an OCI layout: the image's config and
// its root filesystem, unpacked.
type ociImage struct {
	Config struct {
		User         string              `json:"User"`
		Entrypoint   []string            `json:"Entrypoint"`
		WorkingDir   string              `json:"WorkingDir"`
		Volumes      map[string]struct{} `json:"Volumes"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Labels       map[string]string   `json:"Labels"`
	} `json:"config"`
	rootfs string
}

// The image make image builds is self-contained: unpacked from its own OCI
// layout and run with chroot as the image's user (podman run needs cgroups
// this machine's VM does not offer), the proxy starts, answers its probes
// and serves cloudflare-go; the other two commands run too.
func TestImageRunsFromItsOwnRootFilesystem(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the image")
	}
	need(t, "buildah:buildah", "podman:podman")
	if os.Geteuid() != 0 {
		if os.Getenv("KVSHADOW_REQUIRE_DEPLOY_TOOLS") == "1" {
			t.Fatal("chroot needs root")
		}
		t.Skip("skipped: chroot (running the image's root filesystem) needs root")
	}
	dir := t.TempDir()
	oci := filepath.Join(dir, "oci")
	const name = "localhost/kvshadow-image-test"
	// podman's storage of the test's own, made as a user's first podman call
	// made it: with a driver named (vfs), where buildah left to itself picks
	// overlay, and with none, where podman refuses any call naming one.
	var out []byte
	for _, driver := range []string{"--storage-driver=vfs", ""} {
		store := filepath.Join(dir, "store"+driver)
		writeFile(t, store+".conf", "[storage]\ngraphroot = \""+store+"/root\"\nrunroot = \""+store+"/run\"\n")
		t.Setenv("CONTAINERS_STORAGE_CONF", store+".conf")
		if out, err := exec.Command("podman", strings.Fields(driver+" images")...).CombinedOutput(); err != nil {
			t.Fatalf("podman %s images: %v\n%s", driver, err, out)
		}
		var err error
		out, err = exec.Command("make", "--no-print-directory", "-C", "..", "image", "IMAGE="+name, "IMAGE_OCI="+oci).CombinedOutput()
		t.Cleanup(func() { _ = exec.Command("podman", "rmi", "--all", "--force").Run() })
		if err != nil {
			t.Fatalf("make image into a store made by podman %s: %v\n%s", driver, err, out)
		}
	}
	img := unpack(t, oci, filepath.Join(dir, "rootfs"))

	// What the image says of itself.
	version, err := exec.Command("git", "describe", "--tags", "--always", "--dirty").Output()
	if err != nil {
		t.Fatal(err)
	}
	// It is where the runbook's `podman run` looks: podman's own storage,
	// with podman's own driver, no flag given.
	ref := name + ":" + strings.TrimSpace(string(version))
	if out, err := exec.Command("podman", "image", "inspect", "--format", "{{.Id}}", ref).CombinedOutput(); err != nil {
		t.Errorf("podman image inspect %s (podman's default storage, where podman run looks): %v\n%s", ref, err, out)
	}
	if !strings.Contains(string(out), "podman run "+ref) || !strings.Contains(string(out), "| docker load") {
		t.Errorf("make image does not say how to run it and load it into Docker:\n%s", out)
	}
	c := img.Config
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/kvshadow-proxy"}) {
		t.Errorf("user %q, entrypoint %q: want 65532:65532 and kvshadow-proxy", c.User, c.Entrypoint)
	}
	if _, ok := c.Volumes["/var/lib/kvshadow"]; !ok {
		t.Errorf("volumes %v: the journal directory is not one", c.Volumes)
	}
	if got := c.Labels["org.opencontainers.image.version"]; got != strings.TrimSpace(string(version)) || c.Labels["org.opencontainers.image.revision"] == "" {
		t.Errorf("labels %v: want the version %s and the revision", c.Labels, version)
	}

	// Nothing but the commands, the user's names and the journal
	// directory, which belongs to the user.
	var files []string
	err = filepath.Walk(img.rootfs, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			files = append(files, strings.TrimPrefix(path, img.rootfs))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	want := []string{"/etc/group", "/etc/passwd", "/usr/local/bin/kv-emulator", "/usr/local/bin/kvshadow-proxy", "/usr/local/bin/shadow-report"}
	if !slices.Equal(files, want) {
		t.Errorf("the image holds %v, want %v", files, want)
	}
	if st, err := os.Stat(filepath.Join(img.rootfs, "var/lib/kvshadow")); err != nil || st.Sys().(*syscall.Stat_t).Uid != 65532 {
		t.Errorf("/var/lib/kvshadow: %v, want a directory of user 65532", err)
	}
	for _, name := range []string{"kvshadow-proxy", "shadow-report", "kv-emulator"} {
		checkStatic(t, filepath.Join(img.rootfs, "usr/local/bin", name))
	}

	// The other commands run as the user, from the image alone.
	for _, cmd := range [][]string{{"/usr/local/bin/shadow-report", "--help"}, {"/usr/local/bin/kv-emulator", "-help"}} {
		if out, err := chroot(img.rootfs, cmd...).CombinedOutput(); err != nil {
			t.Errorf("%s in the image: %v\n%s", strings.Join(cmd, " "), err, out)
		}
	}
	runProxy(t, img.rootfs)
}

// runProxy starts the image's entrypoint with --demo, as the image's user,
// and drives it as a client would.
func runProxy(t *testing.T, rootfs string) {
	t.Helper()
	cmd := chroot(rootfs, "/usr/local/bin/kvshadow-proxy", "--demo", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--journal-dir", "/var/lib/kvshadow")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}()
	banner := map[string]string{}
	lines := bufio.NewScanner(out)
	assign := regexp.MustCompile(`([A-Z_]+)=(\S+)`)
	for lines.Scan() {
		line := lines.Text()
		if _, rest, ok := strings.Cut(line, "admin API at "); ok {
			banner["admin"] = rest
		}
		for _, m := range assign.FindAllStringSubmatch(line, -1) {
			banner[m[1]] = m[2]
		}
		if banner["CLOUDFLARE_API_TOKEN"] != "" {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if banner["admin"] == "" || banner["CLOUDFLARE_BASE_URL"] == "" {
		_ = cmd.Process.Kill()
		t.Fatalf("the proxy in the image did not start: %v\n%s", <-exited, stderr.String())
	}
	if status, err := os.ReadFile("/proc/" + itoa(int32(cmd.Process.Pid)) + "/status"); err != nil || !regexp.MustCompile(`(?m)^Uid:\s+65532\s`).Match(status) {
		t.Errorf("the proxy does not run as user 65532: %v\n%s", err, status)
	}
	for _, path := range []string{"healthz", "readyz"} {
		resp, err := http.Get(banner["admin"] + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /%s: %d", path, resp.StatusCode)
		}
	}
	// cloudflare-go (through cfkv), with only the environment it printed.
	store, err := cfkv.New(cfkv.ConfigFromEnv(func(k string) string { return banner[k] }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := store.Put(ctx, "wordle:games:1", []byte(`{"g":1}`), kv.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if v, err := store.Get(ctx, "wordle:games:1"); err != nil || string(v) != `{"g":1}` {
		t.Errorf("Get through the image = %q, %v", v, err)
	}
	if page, err := store.List(ctx, kv.ListOptions{Prefix: "wordle:"}); err != nil || len(page.Keys) != 1 {
		t.Errorf("List through the image = %+v, %v", page, err)
	}
	if err := store.Delete(ctx, "wordle:games:1"); err != nil {
		t.Error(err)
	}
	// SIGTERM drains and exits 0; the journal was written as the user.
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the proxy exited with %v after SIGTERM\n%s", err, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the proxy did not stop after SIGTERM\n%s", stderr.String())
	}
	if st, err := os.Stat(filepath.Join(rootfs, "var/lib/kvshadow/demo-kv.journal")); err != nil || st.Sys().(*syscall.Stat_t).Uid != 65532 {
		t.Errorf("the journal in the volume: %v", err)
	}
}

// chroot runs a command of the image as the image's user, with nothing of
// this machine's environment.
func chroot(rootfs string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(context.Background(), "chroot", append([]string{"--userspec=65532:65532", rootfs}, args...)...)
	cmd.Env = []string{}
	return cmd
}

// checkStatic: a static ELF (no interpreter, no shared library), built with
// CGO off and the image's tag, carrying the fallback CA roots.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, _ := f.ImportedLibraries()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a dynamic loader", path)
		}
	}
	if len(libs) > 0 {
		t.Errorf("%s needs %v", path, libs)
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	roots := slices.ContainsFunc(info.Deps, func(m *debug.Module) bool { return m.Path == "golang.org/x/crypto/x509roots/fallback" })
	if settings["CGO_ENABLED"] != "0" || settings["-tags"] != "image" || !roots {
		t.Errorf("%s: CGO_ENABLED=%s, -tags=%q, fallback roots %v", path, settings["CGO_ENABLED"], settings["-tags"], roots)
	}
}

// unpack reads the OCI layout's one image and extracts its layers.
func unpack(t *testing.T, layout, rootfs string) *ociImage {
	t.Helper()
	blob := func(digest string) []byte {
		return mustRead(t, filepath.Join(layout, "blobs", strings.Replace(digest, ":", "/", 1)))
	}
	var index, manifest struct {
		Manifests []struct{ Digest string } `json:"manifests"`
		Config    struct{ Digest string }   `json:"config"`
		Layers    []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(mustRead(t, filepath.Join(layout, "index.json")), &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v %+v", err, index)
	}
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &manifest); err != nil {
		t.Fatal(err)
	}
	img := &ociImage{rootfs: rootfs}
	if err := json.Unmarshal(blob(manifest.Config.Digest), img); err != nil {
		t.Fatal(err)
	}
	for _, l := range manifest.Layers {
		var r io.Reader = strings.NewReader(string(blob(l.Digest)))
		if strings.HasSuffix(l.MediaType, "gzip") {
			gz, err := gzip.NewReader(r)
			if err != nil {
				t.Fatal(err)
			}
			r = gz
		}
		if err := extract(tar.NewReader(r), rootfs); err != nil {
			t.Fatalf("layer %s: %v", l.Digest, err)
		}
	}
	return img
}

// extract writes a layer's entries under root with their modes and owners.
func extract(tr *tar.Reader, root string) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		path := filepath.Join(root, filepath.Clean("/"+h.Name))
		if strings.HasPrefix(filepath.Base(h.Name), ".wh.") {
			return errors.New("whiteouts: the image has one layer to unpack, this one has more")
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, os.FileMode(h.Mode).Perm())
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
				err = os.WriteFile(path, mustReadAll(tr), os.FileMode(h.Mode).Perm())
			}
		default:
			return errors.New("unexpected entry " + h.Name)
		}
		if err == nil {
			err = os.Lchown(path, h.Uid, h.Gid)
		}
		if err == nil {
			err = os.Chmod(path, os.FileMode(h.Mode).Perm())
		}
		if err != nil {
			return err
		}
	}
}

func mustReadAll(r io.Reader) []byte {
	b, _ := io.ReadAll(r)
	return b
}
