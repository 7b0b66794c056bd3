package imagetest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// consumerWorkflow checks out the repository and runs the action from it
// (`uses: ./`, whose action.yml names the image under test), then reads
// its outputs in a later step, as a workflow that branches on the verdict
// does. The run step's shell is sh: the job image is busybox.
const consumerWorkflow = `name: deploy
on: push
jobs:
  nova:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - id: nova
        uses: ./
      - name: read outputs
        shell: sh
        run: echo "next step sees verdict=${{ steps.nova.outputs.verdict }} exit-code=${{ steps.nova.outputs['exit-code'] }} plan-digest=${{ steps.nova.outputs['plan-digest'] }}"
`

// actToolCache is the volume act mounts at /opt/hostedtoolcache.
const actToolCache = "act-toolcache"

// TestActionUnderAct runs a consumer workflow with act in Docker mode: the
// job in a container made from busybox (-P ubuntu-latest=…), the action in
// the image under test, nothing pulled (--pull=false). act v0.2.89 is
// pinned (.ci/tools.sh); its JSON log carries each step's outputs and the
// job's result.
func TestActionUnderAct(t *testing.T) {
	act := findAct(t)
	image := novaImage(t)
	job := jobImage(t)

	repo := t.TempDir()
	root := mustRepoRoot(t)
	manifest := readFile(t, filepath.Join(root, "action.yml"))
	imageLine := regexp.MustCompile(`(?m)^(\s*image:\s*)["']?docker://[^\s"']+["']?\s*$`)
	if !imageLine.MatchString(manifest) {
		t.Fatal("action.yml has no `image: docker://…` line to point at the image under test")
	}
	writeTestFile(t, filepath.Join(repo, "action.yml"), imageLine.ReplaceAllString(manifest, "${1}docker://"+image))
	writeTestFile(t, filepath.Join(repo, ".github", "workflows", "deploy.yml"), consumerWorkflow)
	for _, f := range []string{".nova/contract.yml", ".nova/approvers.yml", "reports/unit.xml", "reports/e2e.xml", "reports/load.xml"} {
		writeTestFile(t, filepath.Join(repo, f), readFile(t, filepath.Join(root, "examples", "hello", f)))
	}
	sha := commitAll(t, repo)
	event := filepath.Join(t.TempDir(), "push.json")
	writeTestFile(t, event, `{"ref": "refs/heads/main", "after": "`+sha+`", "repository": {"name": "hello", "full_name": "acme/hello", "owner": {"login": "acme"}, "default_branch": "main"}}`)

	// act makes a volume for its tool cache and keeps it; one this test
	// made goes when the tests are done (not while another act uses it:
	// docker refuses to remove a volume in use).
	if exec.CommandContext(t.Context(), "docker", "volume", "inspect", actToolCache).Run() != nil {
		atExit(func() { _ = exec.Command("docker", "volume", "rm", actToolCache).Run() })
	}

	// act reads ~/.actrc and $XDG_CONFIG_HOME/act/actrc, whose -P lines
	// would pick other images: a HOME of its own keeps the developer's out.
	home := t.TempDir()
	args := []string{"push", "--json",
		"-W", filepath.Join(".github", "workflows", "deploy.yml"),
		"-e", event,
		"-P", "ubuntu-latest=" + job,
		// act pulls even present images unless told not to, and no
		// registry is reachable.
		"--pull=false",
		"--rm",
		// act's cache server listens on the machine's outbound address;
		// nothing here uses actions/cache.
		"--no-cache-server",
		// nova needs no Docker inside its container.
		"--container-daemon-socket", "-",
	}
	cmd := commandContext(t.Context(), map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_CACHE_HOME": filepath.Join(home, ".cache")}, act, args...)
	cmd.Dir = repo
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t.Logf("act %s", strings.Join(args, " "))
	err := cmd.Run()
	log := parseActLog(t, stdout.String()+stderr.String())
	if err != nil || log.jobResult != "success" {
		t.Fatalf("act: %v, job result %q\n%s\n%s", err, log.jobResult, stdout.String(), stderr.String())
	}
	o := log.outputs["nova"]
	checkOutputs(t, o, map[string]string{"verdict": "pass", "exit-code": "0", "reason": ""})
	if !digestPattern.MatchString(o["plan-digest"]) || !runIDPattern.MatchString(o["run-id"]) {
		t.Errorf("plan-digest %q run-id %q", o["plan-digest"], o["run-id"])
	}
	if !strings.HasPrefix(log.summary, "### nova run: pass") {
		t.Errorf("job summary:\n%s", log.summary)
	}
	want := "next step sees verdict=pass exit-code=0 plan-digest=" + o["plan-digest"]
	if !strings.Contains(log.raw, want) {
		t.Errorf("the next step did not see the outputs: want %q in\n%s", want, log.raw)
	}
}

// findAct is act from the tools cache (make tools), else from PATH, and
// must be the pinned version.
func findAct(t *testing.T) string {
	t.Helper()
	act := filepath.Join(toolsBin(t), "act")
	if _, err := os.Stat(act); err != nil {
		if act, err = exec.LookPath("act"); err != nil {
			t.Fatalf("act is not in the tools cache or on PATH: run `make tools` (.ci/tools.sh act)")
		}
	}
	out, err := exec.CommandContext(t.Context(), act, "--version").CombinedOutput()
	pinned := toolsPin(t, "ACT_VERSION")
	if err != nil || strings.TrimSpace(string(out)) != "act version "+pinned {
		t.Fatalf("%s --version: %q (%v), want act version %s: run `make tools`", act, strings.TrimSpace(string(out)), err, pinned)
	}
	return act
}

// actLog is what the tests read from act's --json log.
type actLog struct {
	jobResult string
	// outputs are the set-output commands of each step, by step id.
	outputs map[string]map[string]string
	summary string
	// raw is the steps' own output, line by line.
	raw string
}

func parseActLog(t *testing.T, text string) actLog {
	t.Helper()
	l := actLog{outputs: map[string]map[string]string{}}
	var raw strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			Msg       string   `json:"msg"`
			Command   string   `json:"command"`
			Name      string   `json:"name"`
			Arg       string   `json:"arg"`
			Content   string   `json:"content"`
			StepID    []string `json:"stepID"`
			JobResult string   `json:"jobResult"`
			Raw       bool     `json:"raw_output"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch {
		case e.JobResult != "":
			l.jobResult = e.JobResult
		case e.Command == "set-output" && len(e.StepID) > 0:
			id := e.StepID[len(e.StepID)-1]
			if l.outputs[id] == nil {
				l.outputs[id] = map[string]string{}
			}
			l.outputs[id][e.Name] = e.Arg
		case e.Command == "summary":
			l.summary += e.Content
		case e.Raw:
			raw.WriteString(e.Msg)
			raw.WriteString("\n")
		}
	}
	l.raw = raw.String()
	return l
}

// commitAll commits dir as a new git repository and returns the commit:
// act takes the workflow's sha and ref from it.
func commitAll(t *testing.T, dir string) string {
	t.Helper()
	repo, err := git.PlainInit(dir, false)
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
	hash, err := wt.Commit("hello", &git.CommitOptions{Author: &object.Signature{Name: "Hello Dev", Email: "dev@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	return hash.String()
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
