package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/postgres/pgtest"
	"github.com/nova-platform/nova/runner/terraform/terraformtest"
)

// These tests run nova as processes, as CI runners would, against one
// real PostgreSQL holding the Terraform state (the pg backend): each
// runner has its own checkout and its own state dir, so nothing on the
// local disk keeps them apart — only what they share through the database.

// fleet is the machine-independent part of a set of runners.
type fleet struct {
	t   *testing.T
	bin string
	env []string
}

func newFleet(t *testing.T, pgURL string) *fleet {
	t.Helper()
	return newEngineFleet(t, runner.EngineTerraform, pgURL)
}

// newEngineFleet is a fleet whose runners run engine, found on PATH.
func newEngineFleet(t *testing.T, engine, pgURL string) *fleet {
	t.Helper()
	terraformtest.Binary(t, engine)
	registry, err := filepath.Abs(filepath.Join("testdata", "registry"))
	if err != nil {
		t.Fatal(err)
	}
	return &fleet{t: t, bin: novaBinary(t), env: append(os.Environ(), "XDG_CONFIG_HOME=", "XDG_DATA_HOME=", "XDG_STATE_HOME=",
		"NOVA_REGISTRY="+registry, "NOVA_TERRAFORM=", "NOVA_TOFU=", "NOVA_EVIDENCE_REPO=", "GITHUB_ACTIONS=", "GITEA_ACTIONS=",
		// The connection string reaches terraform and Nova's lock through
		// the environment: given as -backend-config, terraform would save
		// it, password and all, into the plan file and .terraform/.
		"PG_CONN_STR="+pgURL)}
}

// checkout is one runner's clone of a consumer repository holding contract.
func (f *fleet) checkout(contract string) string {
	dir := f.t.TempDir()
	writeFile(f.t, filepath.Join(dir, ".nova", "contract.yml"), contract)
	gitCommit(f.t, dir)
	return dir
}

// proc is a nova process whose stderr (progress, with --output json) is
// read line by line as it comes, so a test can wait for what nova says.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout bytes.Buffer
	lines  chan string
	mu     sync.Mutex
	stderr strings.Builder
	done   chan struct{}
}

// start runs `nova run` on dir as a runner with HOME home and its own
// state dir.
func (f *fleet) start(home, dir string, args ...string) *proc {
	f.t.Helper()
	full := append([]string{"run", "--dir", dir, "--state-dir", f.t.TempDir(), "--output", "json", "--backend", "pg"}, args...)
	p := &proc{t: f.t, cmd: exec.CommandContext(f.t.Context(), f.bin, full...), lines: make(chan string, 1000), done: make(chan struct{})}
	p.cmd.Env = append(slices.Clip(f.env), "HOME="+home)
	p.cmd.Stdout = &p.stdout
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		defer close(p.lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
	}()
	return p
}

// waitLine returns the first line (from now on) holding s.
func (p *proc) waitLine(s string) string {
	p.t.Helper()
	for line := range p.lines {
		if strings.Contains(line, s) {
			return line
		}
	}
	p.t.Fatalf("nova ended without saying %q:\n%s", s, p.output())
	return ""
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String() + p.stderr.String()
}

// wait returns nova's exit code and its run.
func (p *proc) wait() (int, runView) {
	p.t.Helper()
	for range p.lines {
	}
	<-p.done
	_ = p.cmd.Wait()
	var v runView
	if err := json.Unmarshal(p.stdout.Bytes(), &v); err != nil {
		p.t.Fatalf("stdout is not one JSON document: %v\n%s", err, p.output())
	}
	return p.cmd.ProcessState.ExitCode(), v
}

// runID is the run id nova announces in its first progress line.
func (p *proc) runID() string {
	f := strings.Fields(p.waitLine("nova run ·"))
	return f[len(f)-1]
}

func mkfifo(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// readFifo returns once something writes a line to the pipe.
func readFifo(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := bufio.NewReader(f).ReadString('\n'); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
}

func writeFifo(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
}

func gatedContract(id, started, proceed, log string) string {
	return fmt.Sprintf(`apiVersion: nova/v1
id: %s
stack: gated
environment: dev
inputs:
  started: %s
  proceed: %s
  log: %s
`, id, started, proceed, log)
}

func countLines(t *testing.T, path, word string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(data), word)
}

// TestTwoRunnersOneContractOnAPgBackend, on each engine: while one runner
// applies a contract, a second runner of the same contract and environment
// is refused with STATE_LOCKED naming the first run — not
// APPLY_INDETERMINATE, which the first run's open authorization would
// otherwise produce — and a runner given --lock-timeout waits, then finds
// nothing left to apply.
func TestTwoRunnersOneContractOnAPgBackend(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		t.Parallel()
		twoRunnersOneContract(t, engine)
	})
}

func twoRunnersOneContract(t *testing.T, engine string) {
	pg := pgtest.Start(t)
	f := newEngineFleet(t, engine, pg.URL)
	started, proceed := mkfifo(t, "started"), mkfifo(t, "proceed")
	log := filepath.Join(t.TempDir(), "applies")
	contract := gatedContract("0c0ffee0-2222-4333-8444-555566667777", started, proceed, log) + "engine: " + engine + "\n"
	// One evidence repo for all runners, as a forge's would be.
	home := t.TempDir()

	first := f.start(home, f.checkout(contract))
	firstRun := first.runID()
	readFifo(t, started) // the first run is applying, its locks held

	refused := f.start(home, f.checkout(contract))
	code, v := refused.wait()
	if code != ExitError || v.Reason != string(runner.StateLocked) {
		t.Fatalf("second runner: exit %d reason %s, want %d %s\n%s", code, v.Reason, ExitError, runner.StateLocked, refused.output())
	}
	if msg := stage(v, "plan").Summary; !strings.Contains(msg, firstRun) || !strings.Contains(msg, "another runner") {
		t.Errorf("STATE_LOCKED does not name the holder %s: %q", firstRun, msg)
	}

	waiting := f.start(home, f.checkout(contract), "--lock-timeout", "10m")
	waiting.waitLine("is locked by run " + firstRun)
	writeFifo(t, proceed) // let the first run finish

	if code, v := first.wait(); code != ExitPass || stage(v, "apply").Verdict != runner.Pass {
		t.Fatalf("first runner: exit %d %v\n%s", code, verdicts(v), first.output())
	}
	code, v = waiting.wait()
	if code != ExitPass || !strings.Contains(stage(v, "plan").Summary, "no changes") || !strings.Contains(stage(v, "apply").Summary, "nothing to apply") {
		t.Fatalf("waiting runner: exit %d %+v\n%s", code, v.Stages, waiting.output())
	}
	if n := countLines(t, log, "applied"); n != 1 {
		t.Errorf("the change was applied %d times, want once", n)
	}
	password := strings.TrimPrefix(strings.Split(strings.Split(pg.URL, "@")[0], "//")[1], "nova:")
	for name, p := range map[string]*proc{"first": first, "refused": refused, "waiting": waiting} {
		if strings.Contains(p.output(), password) {
			t.Errorf("the %s runner printed the database password", name)
		}
	}
}

// TestEightContractsInParallelOnAPgBackend runs eight contracts at once as
// eight nova processes on one fresh database (their first terraform inits
// racing to create the backend's tables), one of them stopped by a
// critical plan-level policy: seven apply, and every one reports its own
// verdict — the failing one exit 1.
func TestEightContractsInParallelOnAPgBackend(t *testing.T) {
	pg := pgtest.Start(t)
	f := newFleet(t, pg.URL)
	type job struct {
		name, dir, log string
		p              *proc
	}
	var jobs []*job
	for i := range 8 {
		j := &job{name: fmt.Sprintf("svc-%d", i), log: filepath.Join(t.TempDir(), "applies")}
		j.dir = f.checkout(fmt.Sprintf(`apiVersion: nova/v1
id: 0c0ffee0-3333-4444-8555-%012d
stack: counter
environment: dev
inputs:
  log: %s
  revision: r1
`, i, j.log))
		if i == 5 {
			j.name += " (blocked by policy)"
			writeFile(t, filepath.Join(j.dir, ".nova", "policy", "main.rego"), `package main

# METADATA
# custom:
#   severity: critical
deny_creates contains msg if {
	some rc in input.resource_changes
	"create" in rc.change.actions
	msg := sprintf("%s: nothing may be created this week", [rc.address])
}
`)
		}
		jobs = append(jobs, j)
	}
	for _, j := range jobs {
		j.p = f.start(t.TempDir(), j.dir)
	}
	var summary strings.Builder
	fmt.Fprintf(&summary, "%-28s %-5s %-8s %s\n", "contract", "exit", "verdict", "reason")
	for i, j := range jobs {
		code, v := j.p.wait()
		fmt.Fprintf(&summary, "%-28s %-5d %-8s %s\n", j.name, code, v.Verdict, v.Reason)
		applied := countLines(t, j.log, "applied")
		if i == 5 {
			if code != ExitFail || v.Reason != string(runner.PolicyCriticalFail) || applied != 0 {
				t.Errorf("%s: exit %d reason %s, %d applies; want %d %s, none\n%s", j.name, code, v.Reason, applied, ExitFail, runner.PolicyCriticalFail, j.p.output())
			}
			continue
		}
		if code != ExitPass || applied != 1 {
			t.Errorf("%s: exit %d reason %s, %d applies; want 0 and one apply\n%s", j.name, code, v.Reason, applied, j.p.output())
		}
	}
	t.Logf("eight nova processes on one pg backend:\n%s", summary.String())
}

// TestAHangingApplyTimesOut: terraform apply that never ends is
// interrupted after --terraform-timeout; the run records an apply of
// unknown outcome whose cause is TERRAFORM_TIMEOUT (never a failure), and
// both locks are free afterwards: terraform's state lock and Nova's run
// lock, so the next run reaches the gate — which holds it until an
// operator says what happened.
func TestAHangingApplyTimesOut(t *testing.T) {
	started, proceed := mkfifo(t, "started"), mkfifo(t, "proceed")
	c := newConsumer(t, gatedContract("0c0ffee0-4444-4555-8666-777788889999", started, proceed, filepath.Join(t.TempDir(), "applies")))
	c.extra = []string{"--registry", filepath.Join("testdata", "registry"), "--terraform-timeout", "15s"}
	go func() {
		// Takes the provisioner's "started"; nothing ever writes proceed,
		// so the apply hangs there.
		if f, err := os.Open(started); err == nil {
			_, _ = bufio.NewReader(f).ReadString('\n')
			f.Close()
		}
	}()

	code, v, stderr := c.nova(t.Context(), "run")
	if code != ExitError || v.Reason != string(runner.ApplyIndeterminate) {
		t.Fatalf("exit %d reason %s, want %d %s\n%s", code, v.Reason, ExitError, runner.ApplyIndeterminate, stderr)
	}
	// After the apply's own events come only the decision outcomes the
	// run's end records.
	events := readEvents(t, v.EventsFile)
	i := slices.IndexFunc(events, func(e runner.Event) bool { return e.Type == runner.EventApplyIndeterminate })
	var data map[string]string
	if i < 0 || json.Unmarshal(events[i].Data, &data) != nil ||
		data["reason"] != string(runner.TerraformTimeout) || !strings.Contains(data["cause"], "timed out after 15s") {
		t.Errorf("events %v: want %s with reason %s", eventTypes(events), runner.EventApplyIndeterminate, runner.TerraformTimeout)
	}
	for _, e := range events[i+1:] {
		if e.Type != runner.EventDecisionOutcome {
			t.Errorf("%s after the indeterminate apply", e.Type)
		}
	}
	lockInfo := filepath.Join(c.stateDir, "0c0ffee0-4444-4555-8666-777788889999", "dev", ".terraform.tfstate.lock.info")
	if _, err := os.Stat(lockInfo); err == nil {
		t.Error("terraform left its state lock behind")
	}
	code, v, stderr = c.nova(t.Context(), "run")
	if code == ExitPass || v.Reason != string(runner.ApplyIndeterminate) || stage(v, "gate").Verdict == "" {
		t.Errorf("next run: exit %d reason %s stages %v, want the gate to refuse it as %s\n%s", code, v.Reason, verdicts(v), runner.ApplyIndeterminate, stderr)
	}
}

func eventTypes(events []runner.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}
