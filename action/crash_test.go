package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/terraform/terraformtest"
)

// The crash suite kills nova — with SIGKILL, as the OOM killer or a
// cancelled CI job does, and with SIGTERM — and terraform, at every step
// boundary of a run: after each stage has recorded its event, and before
// and after each terraform command, and OpenTofu's apply likewise. The
// engine runs for real, behind a wrapper that places the kill. After each crash a fresh nova must put
// things right without a human, except where a human is the only one who
// can know (an apply of unknown outcome), and:
//
//   - no apply runs while an earlier one's outcome is unknown: nothing is
//     applied twice behind the operator's back;
//   - a run is refused as indeterminate only when the crashed run had
//     authorized an apply;
//   - every event the crashed run left in its outbox reaches the evidence
//     repo exactly once, and the repo verifies.

var (
	buildOnce sync.Once
	novaBin   string
	buildErr  error
)

// novaBinary builds nova once for the tests that run it as a process.
func novaBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nova-crash-bin-")
		if err != nil {
			buildErr = err
			return
		}
		novaBin = filepath.Join(dir, "nova")
		buildErr = goBuild("-o", novaBin, ".")
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return novaBin
}

// wrapperScript stands in for terraform: it logs each command, runs the
// real binary, and sends the crash where CRASH_AT says ("<command>:before"
// or ":after" signals nova, its parent; ":self-before" or ":self-after"
// kills terraform itself).
const wrapperScript = `#!/bin/sh
cmd="$1"
echo "$cmd start" >> "$CRASH_LOG"
case "$CRASH_AT" in
  "$cmd:before") kill -"$CRASH_SIG" "$PPID" ;;
  "$cmd:self-before") kill -KILL $$ ;;
esac
"$CRASH_TERRAFORM" "$@"
rc=$?
echo "$cmd end $rc" >> "$CRASH_LOG"
case "$CRASH_AT" in
  "$cmd:after") kill -"$CRASH_SIG" "$PPID" ;;
  "$cmd:self-after") kill -KILL $$ ;;
esac
exit $rc
`

type crashPoint struct {
	// stage kills nova once it reports that stage; at is the wrapper's
	// CRASH_AT.
	stage, at string
	sig       syscall.Signal
	// offline crashes a run whose evidence repo cannot be reached, so its
	// events pile up in the outbox for the next run to deliver.
	offline bool
	// engine is the contract's engine ("": terraform).
	engine string
}

func crashPoints() []crashPoint {
	var out []crashPoint
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		for _, stage := range []string{"schema", "policy", "nfr", "confidence", "plan", "plan-policy", "plan-confidence", "approvals", "gate"} {
			out = append(out, crashPoint{stage: stage, sig: sig})
		}
		for _, at := range []string{"init:before", "init:after", "plan:before", "plan:after", "show:before", "apply:before", "apply:after", "output:before"} {
			out = append(out, crashPoint{at: at, sig: sig})
		}
	}
	out = append(out, crashPoint{at: "apply:self-before"}, crashPoint{at: "apply:self-after"},
		crashPoint{stage: "plan-confidence", sig: syscall.SIGKILL, offline: true},
		crashPoint{stage: "confidence", sig: syscall.SIGTERM, offline: true})
	// An apply killed is where the engines could differ (how each takes
	// a signal, what it leaves in the state): OpenTofu is killed there too.
	for _, p := range out {
		if strings.HasPrefix(p.at, "apply:") {
			p.engine = runner.EngineOpenTofu
			out = append(out, p)
		}
	}
	return out
}

func (p crashPoint) String() string {
	where := "after stage " + p.stage
	if p.at != "" {
		where = terraformtest.Program(p.engine) + " " + p.at
	}
	if p.offline {
		where += ", evidence repo unreachable"
	}
	if p.sig == 0 {
		return where + ", " + terraformtest.Program(p.engine) + " killed"
	}
	return fmt.Sprintf("%s %s", where, unix(p.sig))
}

func unix(sig syscall.Signal) string {
	if sig == syscall.SIGKILL {
		return "KILL"
	}
	return "TERM"
}

func TestCrashAtEveryStepBoundary(t *testing.T) {
	bin := novaBinary(t)
	real := map[string]string{}
	for _, engine := range terraformtest.Engines {
		real[engine] = terraformtest.Binary(t, engine)
	}
	points := crashPoints()
	if len(points) < 20 {
		t.Fatalf("%d crash points; the suite promises at least 20", len(points))
	}
	for _, p := range points {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			crashAndRecover(t, bin, real[cmp.Or(p.engine, runner.EngineTerraform)], p)
		})
	}
}

type crashWorld struct {
	t                      *testing.T
	bin, dir, home, counts string
	tfLog, wrapper         string
	env                    []string
	// repo is the evidence repo.
	repo string
}

func crashAndRecover(t *testing.T, bin, realTF string, p crashPoint) {
	w := &crashWorld{t: t, bin: bin, dir: t.TempDir(), home: t.TempDir()}
	aux := t.TempDir()
	w.counts, w.tfLog, w.wrapper = filepath.Join(aux, "applied"), filepath.Join(aux, "terraform.calls"), filepath.Join(aux, "terraform")
	if err := os.WriteFile(w.wrapper, []byte(wrapperScript), 0o755); err != nil {
		t.Fatal(err)
	}
	registry, err := filepath.Abs(filepath.Join("testdata", "registry"))
	if err != nil {
		t.Fatal(err)
	}
	binFlag, engine := "NOVA_TERRAFORM", ""
	if p.engine == runner.EngineOpenTofu {
		binFlag, engine = "NOVA_TOFU", "engine: opentofu\n"
	}
	writeFile(t, filepath.Join(w.dir, ".nova", "contract.yml"), `apiVersion: nova/v1
id: 0c0ffee0-1111-4222-8333-444455556666
stack: counter
environment: dev
inputs:
  log: `+w.counts+`
  revision: r1
`+engine)
	gitCommit(t, w.dir)
	w.repo = filepath.Join(w.home, ".local", "share", "nova", "evidence.git")
	w.env = append(os.Environ(), "HOME="+w.home, "XDG_CONFIG_HOME=", "XDG_DATA_HOME=", "XDG_STATE_HOME=",
		"NOVA_REGISTRY="+registry, binFlag+"="+w.wrapper, "CRASH_TERRAFORM="+realTF, "CRASH_LOG="+w.tfLog,
		"NOVA_EVIDENCE_REPO=", "GITHUB_ACTIONS=", "GITEA_ACTIONS=")
	if p.offline {
		w.offline()
	}

	crashed := w.crash(p)
	if p.offline {
		if err := os.Rename(w.repo+".away", w.repo); err != nil {
			t.Fatal(err)
		}
	}
	outboxed := w.outboxIDs()
	if p.offline && len(outboxed) == 0 {
		t.Fatal("the run without its evidence repo left nothing in the outbox")
	}
	if p.sig == syscall.SIGKILL && p.stage != "" && p.stage != "gate" && len(outboxed) == 0 {
		// Events are pushed in batches, the first with the authorization:
		// a run killed before its gate has pushed nothing yet.
		t.Fatal("the run killed before its gate left nothing in the outbox to deliver")
	}

	// Recover: run again until the change is applied, resolving an apply of
	// unknown outcome as an operator would, from what really happened.
	refusals := 0
	for attempt := 0; ; attempt++ {
		if attempt == 4 {
			t.Fatal("no recovery after four runs")
		}
		code, v, out := w.nova("run", "--output", "json")
		if code == ExitPass {
			break
		}
		if v.Reason != string(runner.ApplyIndeterminate) {
			t.Fatalf("recovery run: exit %d %s\n%s", code, v.Reason, out)
		}
		refusals++
		if !strings.Contains(crashed, runner.EventApplyAuthorized) {
			t.Fatalf("refused as indeterminate although the crashed run never authorized an apply; its events:\n%s", crashed)
		}
		// Until an operator says what happened, nothing applies again.
		if n := w.applyStarts(); n > 1 {
			t.Fatalf("terraform apply ran %d times before the unknown outcome was resolved", n)
		}
		outcome := runner.ResolvedNotApplied
		if w.applied() > 0 {
			outcome = runner.ResolvedApplied
		}
		if code, _, out := w.nova("evidence", "resolve", "--contract", "0c0ffee0-1111-4222-8333-444455556666", "--env", "dev",
			"--outcome", outcome, "--note", "crash test: read the counter"); code != ExitPass {
			t.Fatalf("resolve: exit %d\n%s", code, out)
		}
	}
	if w.applied() == 0 {
		t.Fatal("the change was never applied")
	}
	if code, _, out := w.nova("evidence", "verify"); code != ExitPass {
		t.Fatalf("evidence verify after recovery: exit %d\n%s", code, out)
	}
	inRepo := w.repoIDs()
	for _, id := range outboxed {
		if n := inRepo[id]; n != 1 {
			t.Errorf("outbox event %s is in the evidence repo %d times, want once", id, n)
		}
	}
	if left := w.outboxIDs(); len(left) > 0 {
		t.Errorf("%d event(s) still in the outbox after recovery", len(left))
	}
	t.Logf("%d refusal(s) before recovery; %d outbox event(s) redelivered", refusals, len(outboxed))
}

// offline points the world at an evidence repo reached over a transport
// (as a forge's would be) and takes it away for the crashed run: the first
// command in local mode makes the keys, which the shared repo then uses.
func (w *crashWorld) offline() {
	t := w.t
	if code, _, out := w.nova("validate"); code != ExitPass {
		t.Fatalf("validate: exit %d\n%s", code, out)
	}
	keys := filepath.Join(w.home, ".config", "nova")
	w.repo = filepath.Join(t.TempDir(), "evidence.git")
	if _, err := git.PlainInit(w.repo, true); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "NOVA_EVIDENCE_REPO=file://"+w.repo,
		"NOVA_SIGNING_KEY_FILE="+filepath.Join(keys, "signing.key"), "NOVA_COMMIT_KEY_FILE="+filepath.Join(keys, "commit-key.asc"),
		"NOVA_EVIDENCE_PUBLIC_KEY="+readFileT(t, filepath.Join(keys, "signing.pub")), "NOVA_COMMIT_PUBLIC_KEY="+readFileT(t, filepath.Join(keys, "commit-key.pub.asc")))
	if err := os.Rename(w.repo, w.repo+".away"); err != nil {
		t.Fatal(err)
	}
}

func readFileT(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// crash runs nova until the crash point and returns the event types the
// run recorded locally.
func (w *crashWorld) crash(p crashPoint) string {
	t := w.t
	cmd := exec.CommandContext(t.Context(), w.bin, "run", "--dir", w.dir)
	cmd.Env = append(w.env, "CRASH_AT="+p.at, "CRASH_SIG="+unix(p.sig))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); p.stage != "" && len(f) > 1 && f[0] == p.stage {
			// The stage's line is printed once its event is recorded.
			_ = cmd.Process.Signal(p.sig)
		}
	}
	_ = cmd.Wait()
	var types []string
	_ = filepath.WalkDir(filepath.Join(w.dir, ".nova", "runs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "events.jsonl" {
			data, _ := os.ReadFile(path)
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var e runner.Event
				if json.Unmarshal([]byte(line), &e) == nil {
					types = append(types, e.Type)
				}
			}
		}
		return nil
	})
	return strings.Join(types, "\n")
}

func (w *crashWorld) nova(args ...string) (int, runView, string) {
	w.t.Helper()
	if args[0] != "evidence" {
		args = append(args, "--dir", w.dir)
	}
	cmd := exec.CommandContext(w.t.Context(), w.bin, args...)
	cmd.Env = w.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		w.t.Fatalf("nova %v: %v", args, err)
	}
	var v runView
	_ = json.Unmarshal(stdout.Bytes(), &v)
	return code, v, stdout.String() + stderr.String()
}

// applied counts the applies that really ran (the provisioner's lines).
func (w *crashWorld) applied() int {
	data, _ := os.ReadFile(w.counts)
	return strings.Count(string(data), "applied")
}

// applyStarts counts the terraform apply commands that started.
func (w *crashWorld) applyStarts() int {
	data, _ := os.ReadFile(w.tfLog)
	return strings.Count(string(data), "apply start")
}

// outboxIDs lists the event ids waiting in the evidence outbox.
func (w *crashWorld) outboxIDs() []string {
	var ids []string
	_ = filepath.WalkDir(filepath.Join(w.home, ".local", "state", "nova", "evidence"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return nil
		}
		data, _ := os.ReadFile(path)
		delivered := map[string]bool{}
		var pending []string
		for _, line := range strings.Split(string(data), "\n") {
			var m struct {
				ID        string `json:"id"`
				Delivered string `json:"delivered"`
			}
			if json.Unmarshal([]byte(line), &m) != nil {
				continue
			}
			if m.Delivered != "" {
				delivered[m.Delivered] = true
			} else if m.ID != "" {
				pending = append(pending, m.ID)
			}
		}
		for _, id := range pending {
			if !delivered[id] {
				ids = append(ids, id)
			}
		}
		return nil
	})
	return ids
}

// repoIDs counts each event id in the evidence repo's head.
func (w *crashWorld) repoIDs() map[string]int {
	w.t.Helper()
	repo, err := git.PlainOpen(w.repo)
	if err != nil {
		w.t.Fatal(err)
	}
	head, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		w.t.Fatal(err)
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		w.t.Fatal(err)
	}
	tree, err := c.Tree()
	if err != nil {
		w.t.Fatal(err)
	}
	ids := map[string]int{}
	_ = tree.Files().ForEach(func(f *object.File) error {
		if strings.HasSuffix(f.Name, ".json") {
			content, _ := f.Contents()
			var e runner.Event
			if json.Unmarshal([]byte(content), &e) == nil {
				ids[e.ID]++
			}
		}
		return nil
	})
	return ids
}

// gitCommit makes dir a git checkout with one commit, so the plan binds to
// a real HEAD.
func gitCommit(t *testing.T, dir string) {
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
	if _, err := wt.Commit("contract", &git.CommitOptions{Author: &object.Signature{Name: "consumer", Email: "consumer@example.com"}}); err != nil {
		t.Fatal(err)
	}
}

// goBuild builds as .ci/image-context.sh builds the shipped binary: static
// (no cgo) and -trimpath, so tests and benchmarks run the program users
// run. A cgo build on a machine with gcc is dynamically linked, and its
// start-up (the loader, glibc's init, threads made through pthreads) is
// not what the image pays.
func goBuild(args ...string) error {
	cmd := exec.Command("go", append([]string{"build", "-trimpath"}, args...)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return nil
}
