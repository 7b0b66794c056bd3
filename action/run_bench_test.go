package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner/terraform"
)

// BenchmarkRunNoChange measures a no-change `nova run` of examples/hello,
// the built binary as a user runs it, against what a careful human runs on
// the same rendered root module by hand: `terraform init` (already
// initialised), `plan -out`, `show -json` and `apply` of the saved plan.
// Nova meets a no-change run on two paths, both measured:
//
//   - receipt: dev applied this very change and nothing since, so the run
//     names the change (one `terraform version`) and ends with the receipt
//     of that apply;
//   - plan: dev applied another change since, one that renders the same
//     root module (the contract's on-call differs, which Terraform never
//     sees), so Nova plans, finds no change and records that.
//
// The three sides take turns at going first, so all meet the same
// neighbours, and every Nova run starts from the same evidence (the
// evidence under HOME, copied back before each run). Per run and side:
// ratio (wall time over the bare commands'), ms, own-cpu-ms (user+sys of
// nova less its terraform children's and the wrapper's) and tf-calls (the
// terraform processes it starts); bare-ms and bare-tf-cpu-ms for the bare
// commands. Both sides run terraform behind the same small wrapper
// (testdata/tfrusage) that records each command's CPU time, so both pay
// its start-up once per command.
func BenchmarkRunNoChange(b *testing.B) {
	realTF, err := exec.LookPath("terraform")
	if err != nil {
		b.Fatal("terraform is not on PATH: run `make tools`")
	}
	bin := novaBinary(b)
	work := b.TempDir()
	calls := filepath.Join(work, "terraform.calls")
	tf := buildRusageWrapper(b, realTF, calls, filepath.Join(work, "terraform"))
	consumer, home, stateDir := filepath.Join(work, "hello"), filepath.Join(work, "home"), filepath.Join(work, "state")
	if err := os.CopyFS(consumer, os.DirFS(filepath.Join("..", "examples", "hello"))); err != nil {
		b.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(consumer, ".nova", "runs")); err != nil {
		b.Fatal(err)
	}
	contractFile := filepath.Join(consumer, ".nova", "contract.yml")
	change, err := os.ReadFile(contractFile)
	if err != nil {
		b.Fatal(err)
	}
	other := bytes.Replace(change, []byte("oncall: team-hello\n"), []byte("oncall: team-hello-bench\n"), 1)
	if bytes.Equal(other, change) {
		b.Fatal("examples/hello's contract has no `oncall: team-hello` line to vary")
	}
	writeContract := func(content []byte) {
		if err := os.WriteFile(contractFile, content, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	novaEnv := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME=", "XDG_DATA_HOME=", "XDG_STATE_HOME=",
		"NOVA_EVIDENCE_REPO=", "GITHUB_ACTIONS=", "GITEA_ACTIONS=")

	// Evidence as each path meets it (the repo, its outbox and witness,
	// all under HOME), copied back before every run: a chain growing with
	// every iteration would measure history, which the gate's benchmarks
	// do.
	snapshot := func(name string) string {
		dir := filepath.Join(work, name)
		if out, err := exec.Command("cp", "-a", home, dir).CombinedOutput(); err != nil {
			b.Fatalf("keeping HOME: %v\n%s", err, out)
		}
		return dir
	}
	restore := func(dir string) {
		if err := os.RemoveAll(home); err != nil {
			b.Fatal(err)
		}
		if out, err := exec.Command("cp", "-a", dir, home).CombinedOutput(); err != nil {
			b.Fatalf("restoring HOME: %v\n%s", err, out)
		}
	}
	novaRun := func() (sideCost, runView) {
		if err := os.Truncate(calls, 0); err != nil && !os.IsNotExist(err) {
			b.Fatal(err)
		}
		cmd := exec.Command(bin, "run", "--dir", consumer, "--state-dir", stateDir, "--terraform", tf, "--output", "json")
		cmd.Env = novaEnv
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		c := sideCost{wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
		if err != nil {
			b.Fatalf("nova run: %v\n%s", err, stderr.String())
		}
		var v runView
		if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
			b.Fatalf("nova run: %v\n%s", err, stdout.String())
		}
		c.calls = readCalls(b, calls)
		return c, v
	}
	noChange := func(what string, v runView) {
		if s := stage(v, "apply").Summary; !strings.Contains(s, "nothing to apply") {
			b.Fatalf("%s is not a no-change run: apply said %q", what, s)
		}
	}
	receipt := func(what string, v runView) {
		if v.Receipt == "" || v.BundleDir != "" {
			b.Fatalf("%s did not end with a receipt: receipt %q, bundle %q, stages %+v", what, v.Receipt, v.BundleDir, v.Stages)
		}
	}

	// The first run applies the greeting; the other change then plans no
	// change and applies nothing, but dev now runs it: the plan path's
	// evidence. This change again plans no change: the receipt path's
	// evidence, and the initialised root module the bare side works in.
	if _, v := novaRun(); v.BundleDir == "" {
		b.Fatal("the first run made no plan bundle")
	}
	writeContract(other)
	_, v := novaRun()
	noChange("the other change's run", v)
	planEvidence := snapshot("home.plan")
	writeContract(change)
	_, warm := novaRun()
	noChange("the run after the other change", warm)
	receiptEvidence := snapshot("home.receipt")
	root := filepath.Join(warm.BundleDir, "root")

	// The rendered root uses the local backend at Nova's state path for
	// the contract; a human would name the same state.
	contractID := "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90"
	statePath := filepath.Join(stateDir, contractID, "dev", "terraform.tfstate")
	planFile := filepath.Join(work, "bare.tfplan")
	bareEnv := terraformEnviron()
	bare := [][]string{
		{"init", "-input=false", "-no-color", "-backend-config=path=" + statePath},
		{"plan", "-input=false", "-no-color", "-out=" + planFile},
		{"show", "-json", "-no-color", planFile},
		{"apply", "-input=false", "-no-color", "-auto-approve", planFile},
	}
	bareRun := func() sideCost {
		var c sideCost
		for _, args := range bare {
			cmd := exec.Command(tf, args...)
			cmd.Dir, cmd.Env, cmd.Stdout = root, bareEnv, io.Discard
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Run()
			c.wall += time.Since(start)
			if err != nil {
				b.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
			}
			c.cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		return c
	}

	sides := []struct {
		name string
		run  func() sideCost
	}{
		{"bare", bareRun},
		{"receipt", func() sideCost {
			restore(receiptEvidence)
			c, v := novaRun()
			receipt("a receipt run", v)
			return c
		}},
		{"plan", func() sideCost {
			restore(planEvidence)
			c, v := novaRun()
			noChange("a plan run", v)
			return c
		}},
	}
	totals := make([]sideCost, len(sides))
	last := make([]sideCost, len(sides))
	runs := 0
	for b.Loop() {
		for k := range sides {
			i := (k + runs) % len(sides)
			last[i] = sides[i].run()
			totals[i].add(last[i])
		}
		runs++
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(runs) }
	bareTotal := totals[0]
	b.ReportMetric(per(bareTotal.wall), "bare-ms")
	b.ReportMetric(per(bareTotal.cpu), "bare-tf-cpu-ms")
	for i, s := range sides[1:] {
		t := totals[i+1]
		b.ReportMetric(float64(t.wall)/float64(bareTotal.wall), s.name+"-ratio")
		b.ReportMetric(per(t.wall), s.name+"-ms")
		b.ReportMetric(per(t.cpu-t.tfCPU()), s.name+"-own-cpu-ms")
		b.ReportMetric(float64(len(t.calls))/float64(runs), s.name+"-tf-calls")
		b.Logf("terraform commands of a %s run: %s", s.name, strings.Join(last[i+1].commands(), ", "))
	}
}

// sideCost is what one side of BenchmarkRunNoChange spent.
type sideCost struct {
	wall, cpu time.Duration
	calls     []tfCall
}

// tfCall is one line of the wrapper's record.
type tfCall struct {
	command     string
	child, self time.Duration
}

func (s *sideCost) add(o sideCost) {
	s.wall += o.wall
	s.cpu += o.cpu
	s.calls = append(s.calls, o.calls...)
}

// tfCPU is what terraform and the wrapper around it spent: the part of
// nova's CPU time (which counts its children's) that is not Nova's own.
func (s sideCost) tfCPU() time.Duration {
	var d time.Duration
	for _, c := range s.calls {
		d += c.child + c.self
	}
	return d
}

func (s sideCost) commands() []string {
	out := make([]string, len(s.calls))
	for i, c := range s.calls {
		out[i] = c.command
	}
	return out
}

func readCalls(tb testing.TB, path string) []tfCall {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatalf("nova ran no terraform: %v", err)
	}
	defer f.Close()
	var out []tfCall
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			tb.Fatalf("record line %q", sc.Text())
		}
		child, err1 := strconv.ParseInt(fields[1], 10, 64)
		self, err2 := strconv.ParseInt(fields[2], 10, 64)
		if err1 != nil || err2 != nil {
			tb.Fatalf("record line %q", sc.Text())
		}
		out = append(out, tfCall{command: fields[0], child: time.Duration(child) * time.Microsecond, self: time.Duration(self) * time.Microsecond})
	}
	return out
}

// buildRusageWrapper builds testdata/tfrusage to run realTF and record
// into record.
func buildRusageWrapper(tb testing.TB, realTF, record, out string) string {
	tb.Helper()
	cmd := exec.Command("go", "build", "-o", out,
		"-ldflags", fmt.Sprintf("-X main.terraform=%s -X main.record=%s", realTF, record), "./testdata/tfrusage")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building the terraform wrapper: %v\n%s", err, b)
	}
	return out
}

// terraformEnviron is the environment Nova gives terraform, for the bare
// side: the same configuration file, no update check, in automation (as
// terraform-exec adds).
func terraformEnviron() []string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	env = terraform.Environment(env)
	env["TF_IN_AUTOMATION"] = "1"
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
