package imagetest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The image is built once per test binary, from a context made by the same
// script `make image` and the release workflow use, and removed when the
// tests are done. Its tag is unique to this process: other checkouts on
// the machine may be testing their own image at the same time.
var (
	buildOnce  sync.Once
	builtImage string
	buildErr   error

	cleanupMu sync.Mutex
	cleanups  []func()

	runSuffix = randomHex(4)
)

// testVersion is stamped into the test image's nova.
const testVersion = "imagetest"

func TestMain(m *testing.M) {
	code := m.Run()
	cleanupMu.Lock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	cleanupMu.Unlock()
	os.Exit(code)
}

// atExit runs f after every test of this binary, for what outlives one
// test: the images shared between them.
func atExit(f func()) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	cleanups = append(cleanups, f)
}

// requireDocker fails the test, never skips it, when there is no Docker
// Engine: showing the image built and run is what these tests are for.
func requireDocker(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatal("docker is not on PATH: these tests build and run the action's image with the real Docker Engine")
	}
	if out, err := exec.CommandContext(t.Context(), "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		t.Fatalf("the Docker Engine does not answer `docker version`: %v\n%s", err, out)
	}
}

// novaImage is the action's image, built on first use.
func novaImage(t *testing.T) string {
	t.Helper()
	requireDocker(t)
	buildOnce.Do(func() { builtImage, buildErr = buildImage() })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtImage
}

func buildImage() (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "nova-image-context-")
	if err != nil {
		return "", err
	}
	atExit(func() { os.RemoveAll(dir) })
	script := exec.Command("bash", filepath.Join(root, ".ci", "image-context.sh"), dir)
	script.Env = append(os.Environ(), "VERSION="+testVersion)
	if out, err := script.CombinedOutput(); err != nil {
		return "", fmt.Errorf(".ci/image-context.sh: %v\n%s", err, out)
	}
	args, err := os.ReadFile(filepath.Join(dir, "build-args"))
	if err != nil {
		return "", err
	}
	tag := "nova-imagetest:" + runSuffix
	build := []string{"build", "--quiet", "-t", tag}
	for _, line := range strings.Fields(string(args)) {
		build = append(build, "--build-arg", line)
	}
	if out, err := exec.Command("docker", append(build, dir)...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker build of %s: %v\n%s", dir, err, out)
	}
	atExit(func() { _ = exec.Command("docker", "image", "rm", "--force", tag).Run() })
	return tag, nil
}

// repoRoot is the directory of go.mod above the test's working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func mustRepoRoot(t *testing.T) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// docker runs one docker command that must succeed and returns its stdout.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// actionManifest is the part of action.yml the tests read: they take the
// inputs, outputs and how the image is run from the real file, so that
// an input added there is passed here as the runner would pass it.
type actionManifest struct {
	Inputs map[string]struct {
		Default  string `yaml:"default"`
		Required bool   `yaml:"required"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
	} `yaml:"outputs"`
	Runs struct {
		Using          string            `yaml:"using"`
		Image          string            `yaml:"image"`
		Entrypoint     string            `yaml:"entrypoint"`
		PreEntrypoint  string            `yaml:"pre-entrypoint"`
		PostEntrypoint string            `yaml:"post-entrypoint"`
		Args           []string          `yaml:"args"`
		Env            map[string]string `yaml:"env"`
	} `yaml:"runs"`
}

func readActionManifest(t *testing.T) actionManifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(mustRepoRoot(t), "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var m actionManifest
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return m
}

// TestImageEntrypointIsWhatActionYmlRuns: action.yml names a prebuilt
// image and gives no entrypoint or args, so the runner starts the image's
// own ENTRYPOINT with no arguments; that must be nova, which then reads
// its INPUT_*. And no USER: GitHub runs container actions as root, and a
// non-root nova could not write the root-owned workspace and files.
func TestImageEntrypointIsWhatActionYmlRuns(t *testing.T) {
	m := readActionManifest(t)
	if m.Runs.Using != "docker" || !strings.HasPrefix(m.Runs.Image, "docker://") {
		t.Fatalf("action.yml runs: using %q image %q, want a docker action with a docker:// image", m.Runs.Using, m.Runs.Image)
	}
	if m.Runs.Entrypoint != "" || m.Runs.PreEntrypoint != "" || m.Runs.PostEntrypoint != "" || len(m.Runs.Args) > 0 {
		t.Fatalf("action.yml overrides the image's entrypoint or arguments (%+v): the image's ENTRYPOINT is what runs", m.Runs)
	}

	image := novaImage(t)
	var inspect []struct {
		Config struct {
			Entrypoint []string
			Cmd        []string
			User       string
			Env        []string
		}
		Os, Architecture string
	}
	if err := json.Unmarshal([]byte(docker(t, "image", "inspect", image)), &inspect); err != nil || len(inspect) != 1 {
		t.Fatalf("docker image inspect: %v", err)
	}
	c := inspect[0].Config
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/nova"}) || len(c.Cmd) > 0 {
		t.Errorf("entrypoint %q cmd %q, want [/usr/local/bin/nova] and no cmd", c.Entrypoint, c.Cmd)
	}
	if c.User != "" && c.User != "0" && c.User != "root" {
		t.Errorf("image runs as %q; GitHub runs container actions as root", c.User)
	}
	if !slices.Contains(c.Env, "PATH=/usr/local/bin") {
		t.Errorf("env %q: nova finds terraform on PATH, which must be /usr/local/bin", c.Env)
	}
	if got := inspect[0].Os + "/" + inspect[0].Architecture; got != "linux/amd64" {
		t.Errorf("image platform %s, want linux/amd64 (GitHub's hosted runners)", got)
	}
}

// TestImageBinariesAreStatic: the image has no libc, so every program must
// be static; nova is the CGO_ENABLED=0, -trimpath build, as `go version -m`
// shows for the very file in the image; terraform and tofu are the pinned
// versions.
func TestImageBinariesAreStatic(t *testing.T) {
	image := novaImage(t)
	dir := t.TempDir()
	id := strings.TrimSpace(docker(t, "create", image))
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "--force", id).Run() })
	nova, tf, tofu := filepath.Join(dir, "nova"), filepath.Join(dir, "terraform"), filepath.Join(dir, "tofu")
	docker(t, "cp", id+":/usr/local/bin/nova", nova)
	docker(t, "cp", id+":/usr/local/bin/terraform", tf)
	docker(t, "cp", id+":/usr/local/bin/tofu", tofu)

	out, err := exec.CommandContext(t.Context(), "go", "version", "-m", nova).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	settings := buildSettings(string(out))
	for key, want := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": "linux", "GOARCH": "amd64"} {
		if settings[key] != want {
			t.Errorf("go version -m: %s=%q, want %q\n%s", key, settings[key], want, out)
		}
	}
	if !strings.Contains(string(out), "\tpath\tgithub.com/nova-platform/nova/action\n") {
		t.Errorf("the image's nova is not built from ./action:\n%s", out)
	}
	for _, bin := range []string{nova, tf, tofu} {
		if interp := interpreter(t, bin); interp != "" {
			t.Errorf("%s asks for the dynamic loader %s, which the image does not have", filepath.Base(bin), interp)
		}
	}

	// The engines in the image are the pinned ones, and the labels say so.
	for _, e := range []struct{ bin, pin, label string }{
		{"terraform", "TERRAFORM_IMAGE_VERSION", "io.github.nova-platform.terraform.version"},
		{"tofu", "OPENTOFU_VERSION", "io.github.nova-platform.opentofu.version"},
	} {
		pinned := toolsPin(t, e.pin)
		version := docker(t, "run", "--rm", "--entrypoint", "/usr/local/bin/"+e.bin, image, "version", "-json")
		var v struct {
			Version string `json:"terraform_version"`
		}
		if err := json.Unmarshal([]byte(version), &v); err != nil || v.Version != pinned {
			t.Errorf("%s in the image is %q (%v), .ci/tools.sh pins %s", e.bin, v.Version, err, pinned)
		}
		label := strings.TrimSpace(docker(t, "image", "inspect", "--format", `{{index .Config.Labels "`+e.label+`"}}`, image))
		if label != pinned {
			t.Errorf("%s version label %q, want %s", e.bin, label, pinned)
		}
	}
}

// TestImageHoldsOnlyWhatNovaNeeds lists the image's files: no shell, no
// package manager, nothing that a later change could come to rely on
// without saying so in action/Dockerfile.
func TestImageHoldsOnlyWhatNovaNeeds(t *testing.T) {
	image := novaImage(t)
	id := strings.TrimSpace(docker(t, "create", image))
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "--force", id).Run() })
	cmd := exec.CommandContext(t.Context(), "docker", "export", id)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	files := map[string]os.FileMode{}
	tr := tar.NewReader(bufio.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading docker export: %v", err)
		}
		files["/"+strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")] = h.FileInfo().Mode()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("docker export: %v", err)
	}
	var regular []string
	for name, mode := range files {
		// Docker adds these to every container's filesystem.
		if mode.IsRegular() && !slices.Contains([]string{"/.dockerenv", "/dev/console", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf"}, name) {
			regular = append(regular, name)
		}
	}
	slices.Sort(regular)
	want := []string{"/etc/group", "/etc/nsswitch.conf", "/etc/passwd", "/etc/ssl/certs/ca-certificates.crt", "/usr/local/bin/nova", "/usr/local/bin/terraform", "/usr/local/bin/tofu"}
	if !slices.Equal(regular, want) {
		t.Errorf("files in the image:\n%s\nwant:\n%s", strings.Join(regular, "\n"), strings.Join(want, "\n"))
	}
	if mode, ok := files["/tmp"]; !ok || mode.Perm() != 0o777 || mode&os.ModeSticky == 0 {
		t.Errorf("/tmp is %v, want a sticky world-writable directory", mode)
	}
	if _, ok := files["/bin/sh"]; ok {
		t.Error("the image has /bin/sh: action/Dockerfile says why it has no shell")
	}
}

// buildSettings reads the "build" lines of `go version -m`.
func buildSettings(out string) map[string]string {
	settings := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.SplitN(strings.TrimSpace(line), "\t", 2)
		if len(fields) == 2 && fields[0] == "build" {
			if k, v, ok := strings.Cut(fields[1], "="); ok {
				settings[k] = v
			}
		}
	}
	return settings
}

// interpreter is the ELF program interpreter (the dynamic loader) a
// binary asks for; "" for a static one.
func interpreter(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, _ := io.ReadAll(p.Open())
			return strings.TrimRight(string(b), "\x00")
		}
	}
	return ""
}

// toolsPin reads a pinned version from .ci/tools.sh, the one place pins
// are written.
func toolsPin(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(mustRepoRoot(t), ".ci", "tools.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + name + `=(\S+)$`).FindSubmatch(data)
	if m == nil {
		t.Fatalf(".ci/tools.sh pins no %s", name)
	}
	return strings.TrimPrefix(string(m[1]), "v")
}

// toolsBin is .ci/tools.sh's TOOLS_BIN, computed the same way.
func toolsBin(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("NOVA_TOOLS_BIN"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatalf("locating the tools cache: %v", err)
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "nova-tools", "bin")
}

// commandContext is exec.CommandContext with the environment given as a
// map on top of this process's.
func commandContext(ctx context.Context, env map[string]string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}
