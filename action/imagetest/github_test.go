package imagetest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner/bundle"
	"github.com/nova-platform/nova/templates"
)

// helloID is examples/hello's contract id.
const helloID = "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90"

var (
	runIDPattern  = regexp.MustCompile(`^\d{8}T\d{6}Z-[0-9a-f]{8}$`)
	digestPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// TestActionAsGitHubRunsIt runs the image as GitHub's runner runs the
// action, over a checkout of examples/hello, and reads what a workflow
// sees: the exit code, the step outputs, the job summary, the annotations.
func TestActionAsGitHubRunsIt(t *testing.T) {
	image := novaImage(t)

	t.Run("dev pass", func(t *testing.T) {
		r := newGitHubRunner(t)
		r.checkout(nil, false)
		res := r.run(image, step{})
		if res.exitCode != 0 {
			t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", res.exitCode, res.stdout, res.stderr)
		}
		o := res.outputs
		checkOutputs(t, o, map[string]string{"verdict": "pass", "exit-code": "0", "reason": ""})
		// A run that got to the end has a value for each of these.
		for _, name := range []string{"run-id", "plan-digest", "confidence", "bundle-dir"} {
			if o[name] == "" {
				t.Errorf("output %s is empty after a full pass (outputs %q)", name, o)
			}
		}
		if !digestPattern.MatchString(o["plan-digest"]) {
			t.Errorf("plan-digest %q is not a sha256", o["plan-digest"])
		}
		if c, err := strconv.ParseFloat(o["confidence"], 64); err != nil || c < 0.5 || c > 1 {
			t.Errorf("confidence %q, want a dev-passing score", o["confidence"])
		}
		r.checkRunRecorded(o["run-id"])
		r.checkBundle(o["bundle-dir"])
		checkSummary(t, res.summary, "### nova run: pass", "Contract <code>"+templates.EscapeMarkdown(helloID)+"</code> · environment <code>dev</code>", "| apply | pass |")
		if errs := annotationsOf(res, "error"); len(errs) > 0 {
			t.Errorf("a pass annotates errors: %+v", errs)
		}
		// HOME is the runner's /github/home: the keys made on first use
		// and local mode's evidence and state land there, so a later step
		// of the job finds them.
		for _, p := range []string{".config/nova/signing.pub", ".local/share/nova/evidence.git", ".local/state/nova/state/" + helloID + "/dev/terraform.tfstate"} {
			if _, err := os.Stat(filepath.Join(r.home, p)); err != nil {
				t.Errorf("nothing at $HOME/%s after the run: %v", p, err)
			}
		}
		// nova sets outputs; it must not change the job's environment,
		// PATH or state behind the workflow's back.
		if res.env != "" || res.path != "" || res.state != "" {
			t.Errorf("GITHUB_ENV %q GITHUB_PATH %q GITHUB_STATE %q, want all untouched", res.env, res.path, res.state)
		}
		checkNoLeak(t, res, "runtime-token-")
	})

	// One image runs both engines: the contract names OpenTofu, and the
	// same image and step plan and apply with the tofu it carries.
	t.Run("dev pass on OpenTofu", func(t *testing.T) {
		r := newGitHubRunner(t)
		r.checkout(func(contract string) string { return contract + "engine: opentofu\n" }, false)
		res := r.run(image, step{})
		if res.exitCode != 0 {
			t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", res.exitCode, res.stdout, res.stderr)
		}
		checkOutputs(t, res.outputs, map[string]string{"verdict": "pass", "exit-code": "0", "reason": ""})
		r.checkBundle(res.outputs["bundle-dir"])
		m, err := bundle.ReadManifest(filepath.Join(r.workspace, res.outputs["bundle-dir"]))
		if err != nil || m.Engine != "opentofu "+toolsPin(t, "OPENTOFU_VERSION") {
			t.Errorf("the plan was made by %q (%v), want the image's OpenTofu", m.Engine, err)
		}
		if _, err := os.Stat(filepath.Join(r.home, ".local/state/nova/state", helloID, "dev", "terraform.tfstate")); err != nil {
			t.Errorf("no state after the apply: %v", err)
		}
	})

	t.Run("policy fail", func(t *testing.T) {
		r := newGitHubRunner(t)
		const secret = "AKIAIOSFODNN7EXAMPLE"
		r.checkout(func(contract string) string {
			return strings.Replace(contract, "greeting: Hello", "greeting: "+secret, 1)
		}, false)
		res := r.run(image, step{})
		if res.exitCode != 1 {
			t.Fatalf("exit %d, want 1 (verdict fail)\nstdout:\n%s\nstderr:\n%s", res.exitCode, res.stdout, res.stderr)
		}
		checkOutputs(t, res.outputs, map[string]string{"verdict": "fail", "exit-code": "1", "reason": "POLICY_CRITICAL_FAIL", "plan-digest": "", "bundle-dir": ""})
		r.checkRunRecorded(res.outputs["run-id"])
		checkSummary(t, res.summary, "### nova run: fail", "| policy | fail |", "POLICY_CRITICAL_FAIL")

		// The finding is annotated on the contract, at the line of the
		// input, with a path GitHub resolves from the repository root.
		line := lineOf(t, filepath.Join(r.workspace, ".nova", "contract.yml"), "greeting:")
		var found bool
		for _, a := range annotationsOf(res, "error") {
			if a.props["file"] == ".nova/contract.yml" && a.props["line"] == strconv.Itoa(line) &&
				strings.HasPrefix(a.props["title"], "nova.secrets.plaintext") && strings.Contains(a.message, "greeting") {
				found = true
			}
		}
		if !found {
			t.Errorf("no ::error annotation on .nova/contract.yml line %d for the secret; annotations: %+v\nstdout:\n%s", line, res.annotations, res.stdout)
		}
		checkNoLeak(t, res, secret)
		if _, err := os.Stat(filepath.Join(r.home, ".local/state/nova/state", helloID, "dev", "terraform.tfstate")); err == nil {
			t.Error("a contract that failed policy was applied")
		}
	})

	t.Run("qa wait", func(t *testing.T) {
		r := newGitHubRunner(t)
		// The commit is signed by a key the workflow trusts, given as a
		// file in the runner's temp directory (a path the runner rewrites
		// for the container): provenance is verified.
		trusted := r.checkout(nil, true)
		env := map[string]string{"NOVA_TRUSTED_KEYS": trusted}
		// qa follows dev (PROMOTION_ORDER_VIOLATION otherwise): dev
		// applies first, in this job's home.
		if res := r.run(image, step{env: env}); res.exitCode != 0 {
			t.Fatalf("dev: exit %d\nstdout:\n%s\nstderr:\n%s", res.exitCode, res.stdout, res.stderr)
		}
		res := r.run(image, step{with: map[string]string{"environment": "qa"}, env: env})
		if res.exitCode != 3 {
			t.Fatalf("exit %d, want 3 (awaiting approval)\nstdout:\n%s\nstderr:\n%s", res.exitCode, res.stdout, res.stderr)
		}
		o := res.outputs
		checkOutputs(t, o, map[string]string{"verdict": "awaiting_approval", "exit-code": "3", "reason": "APPROVAL_REQUIRED"})
		if !digestPattern.MatchString(o["plan-digest"]) {
			t.Errorf("plan-digest %q: an approval must name the plan, so the waiting run must publish it", o["plan-digest"])
		}
		if c, err := strconv.ParseFloat(o["confidence"], 64); err != nil || c < 0.95 {
			t.Errorf("confidence %q, want 0.950 or more: the trusted key verifies the commit", o["confidence"])
		}
		r.checkRunRecorded(o["run-id"])
		r.checkBundle(o["bundle-dir"])
		checkSummary(t, res.summary, "### nova run: awaiting_approval", "environment <code>qa</code>", "| gate | awaiting_approval |", o["plan-digest"], "commit signature verified")
		if errs := annotationsOf(res, "error"); len(errs) > 0 {
			t.Errorf("waiting for approval is not an error, yet: %+v", errs)
		}
		if _, err := os.Stat(filepath.Join(r.home, ".local/state/nova/state", helloID, "qa", "terraform.tfstate")); err == nil {
			t.Error("qa was applied without an approval")
		}
	})
}

// checkout copies examples/hello into the workspace, lets edit change the
// contract, and commits it, as actions/checkout leaves a workspace: a git
// repository at the commit GITHUB_SHA names. With sign, the commit is
// signed by a fresh OpenPGP key, whose public half it writes to the
// runner's temp directory and returns.
func (r *githubRunner) checkout(edit func(contract string) string, sign bool) (trustedKeys string) {
	t := r.t
	t.Helper()
	src := filepath.Join(mustRepoRoot(t), "examples", "hello")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		// A run of `make demo` leaves its records in the example.
		if d.IsDir() && (d.Name() == "runs" || d.Name() == ".terraform") {
			return filepath.SkipDir
		}
		dst := filepath.Join(r.workspace, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	contract := filepath.Join(r.workspace, ".nova", "contract.yml")
	if edit != nil {
		data := readFile(t, contract)
		edited := edit(data)
		if edited == data {
			t.Fatal("the contract edit changed nothing")
		}
		if err := os.WriteFile(contract, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	repo, err := git.PlainInit(r.workspace, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddGlob("."); err != nil {
		t.Fatal(err)
	}
	opts := &git.CommitOptions{Author: &object.Signature{Name: "Hello Dev", Email: "dev@example.com", When: time.Now()}}
	if sign {
		key, err := openpgp.NewEntity("Hello Dev", "", "dev@example.com", nil)
		if err != nil {
			t.Fatal(err)
		}
		opts.SignKey = key
		var buf bytes.Buffer
		w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := key.Serialize(w); err != nil {
			t.Fatal(err)
		}
		w.Close()
		trustedKeys = filepath.Join(r.temp, "trusted.asc")
		if err := os.WriteFile(trustedKeys, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hash, err := wt.Commit("hello", opts)
	if err != nil {
		t.Fatal(err)
	}
	r.sha = hash.String()
	return trustedKeys
}

// checkRunRecorded: the run-id output names the run whose events nova
// wrote into the workspace, where later steps of the job find them.
func (r *githubRunner) checkRunRecorded(runID string) {
	t := r.t
	t.Helper()
	if !runIDPattern.MatchString(runID) {
		t.Errorf("run-id %q is not a run id", runID)
		return
	}
	if _, err := os.Stat(filepath.Join(r.workspace, ".nova", "runs", runID, "events.jsonl")); err != nil {
		t.Errorf("run-id %s: no events in the workspace: %v", runID, err)
	}
}

// checkBundle: bundle-dir names the plan bundle in the workspace. It is
// read as a path relative to the workspace, as a later step uses it; a
// path inside the container (/github/workspace/…) is mapped back to the
// host, for as long as nova still reports one.
func (r *githubRunner) checkBundle(dir string) {
	t := r.t
	t.Helper()
	if dir == "" {
		t.Error("bundle-dir is empty")
		return
	}
	host := filepath.Join(r.workspace, dir)
	if filepath.IsAbs(dir) {
		host = r.toHost(dir)
		t.Logf("bundle-dir %q is a path inside the container; a later step on the host cannot use it", dir)
	}
	if rel, err := filepath.Rel(r.workspace, host); err != nil || strings.HasPrefix(rel, "..") {
		t.Errorf("bundle-dir %q is outside the workspace", dir)
		return
	}
	if _, err := os.Stat(filepath.Join(host, bundle.ManifestFile)); err != nil {
		t.Errorf("bundle-dir %q holds no plan bundle: %v", dir, err)
	}
}

func checkOutputs(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("output %s = %q (set: %v), want %q", k, g, ok, v)
		}
	}
}

func checkSummary(t *testing.T, summary string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(summary, w) {
			t.Errorf("job summary lacks %q:\n%s", w, summary)
		}
	}
}

// checkNoLeak: a value nova must never print appears in nothing the
// workflow's log, outputs or summary show.
func checkNoLeak(t *testing.T, res stepResult, value string) {
	t.Helper()
	for what, text := range map[string]string{"stdout": res.stdout, "stderr": res.stderr, "summary": res.summary} {
		if strings.Contains(text, value) {
			t.Errorf("%s shows %q", what, value)
		}
	}
	for k, v := range res.outputs {
		if strings.Contains(v, value) {
			t.Errorf("output %s shows %q", k, value)
		}
	}
}

func annotationsOf(res stepResult, level string) []annotation {
	var out []annotation
	for _, a := range res.annotations {
		if a.level == level {
			out = append(out, a)
		}
	}
	return out
}

// lineOf is the 1-based line of the first line of a file containing s.
func lineOf(t *testing.T, path, s string) int {
	t.Helper()
	for i, line := range strings.Split(readFile(t, path), "\n") {
		if strings.Contains(line, s) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line with %q", path, s)
	return 0
}
