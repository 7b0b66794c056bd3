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

// BenchmarkRunNoChange is goal 1 of issue 13: a no-change `nova run` of
// examples/hello, the built binary as a user runs it, against what a
// careful human runs on the same rendered root module by hand — `terraform
// init` (already initialised), `plan -out`, `show -json` and `apply` of
// the saved plan. The two sides alternate which goes first, so both meet
// the same neighbours, and the figures are per run:
//
//   - ratio: Nova's wall time over the bare commands' (goal ≤ 1.0);
//   - nova-own-cpu-ms: user+sys of the nova process less its terraform
//     children (goal ≤ 50 ms);
//   - nova-tf-cpu-ms, bare-tf-cpu-ms: what terraform itself spent on each
//     side;
//   - nova-tf-calls: the terraform processes a run starts.
//
// With NOVA_BENCH_BASE set to another nova binary, that binary runs as a
// third side (base-ratio, base-own-cpu-ms, base-tf-calls).
//
// Both sides run terraform behind the same small wrapper
// (testdata/tfrusage) that records each command's CPU time, so both pay
// its start-up once per command. ns/op is one run of each side together.
// docs/benchmarks.md has the figures and the command.
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
	novaEnv := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME=", "XDG_DATA_HOME=", "XDG_STATE_HOME=",
		"NOVA_EVIDENCE_REPO=", "GITHUB_ACTIONS=", "GITEA_ACTIONS=")

	// Every measured run starts from the evidence the warm-up left (the
	// repo, its outbox and witness, all under HOME): the gate reads a
	// contract's whole chain, and a chain growing with every iteration
	// would measure history, which is goal 3's benchmark, not this one.
	snapshot := filepath.Join(work, "home.snapshot")
	restore := func() {
		if _, err := os.Stat(snapshot); err != nil {
			return
		}
		if err := os.RemoveAll(home); err != nil {
			b.Fatal(err)
		}
		if out, err := exec.Command("cp", "-a", snapshot, home).CombinedOutput(); err != nil {
			b.Fatalf("restoring HOME: %v\n%s", err, out)
		}
	}
	runWith := func(bin string) sideCost {
		restore()
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
		c.bundle = v.BundleDir
		c.applySummary = stage(v, "apply").Summary
		c.calls = readCalls(b, calls)
		return c
	}
	novaRun := func() sideCost { return runWith(bin) }
	// The first run applies the greeting; the second plans no change and
	// leaves the initialised root module the bare side works in.
	if first := novaRun(); first.bundle == "" {
		b.Fatal("the first run made no plan bundle")
	}
	warm := novaRun()
	if !strings.Contains(warm.applySummary, "nothing to apply") {
		b.Fatalf("the second run is not a no-change run: apply said %q", warm.applySummary)
	}
	if out, err := exec.Command("cp", "-a", home, snapshot).CombinedOutput(); err != nil {
		b.Fatalf("keeping HOME: %v\n%s", err, out)
	}
	root := filepath.Join(warm.bundle, "root")
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

	// NOVA_BENCH_BASE names another nova binary (say, main's) to run as a
	// third side in the same rotation: a change is then measured against
	// what it replaces under the same neighbours.
	base := os.Getenv("NOVA_BENCH_BASE")
	sides := []func() sideCost{novaRun, bareRun}
	if base != "" {
		sides = append(sides, func() sideCost { return runWith(base) })
	}
	totals := make([]sideCost, len(sides))
	var callsSeen []string
	runs := 0
	for b.Loop() {
		// Each side takes each place in the order in turn.
		for k := range sides {
			i := (k + runs) % len(sides)
			c := sides[i]()
			if i != 1 && !strings.Contains(c.applySummary, "nothing to apply") {
				b.Fatalf("run %d was not a no-change run: apply said %q", runs, c.applySummary)
			}
			if i == 0 {
				callsSeen = c.commands()
			}
			totals[i].add(c)
		}
		runs++
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(runs) }
	novaTotal, bareTotal := totals[0], totals[1]
	b.ReportMetric(float64(novaTotal.wall)/float64(bareTotal.wall), "ratio")
	b.ReportMetric(per(novaTotal.wall), "nova-ms")
	b.ReportMetric(per(bareTotal.wall), "bare-ms")
	b.ReportMetric(per(novaTotal.cpu-novaTotal.tfCPU()), "nova-own-cpu-ms")
	b.ReportMetric(per(novaTotal.tfChildCPU()), "nova-tf-cpu-ms")
	b.ReportMetric(per(bareTotal.cpu), "bare-tf-cpu-ms")
	b.ReportMetric(float64(len(novaTotal.calls))/float64(runs), "nova-tf-calls")
	if base != "" {
		baseTotal := totals[2]
		b.ReportMetric(float64(baseTotal.wall)/float64(bareTotal.wall), "base-ratio")
		b.ReportMetric(per(baseTotal.cpu-baseTotal.tfCPU()), "base-own-cpu-ms")
		b.ReportMetric(float64(len(baseTotal.calls))/float64(runs), "base-tf-calls")
	}
	b.Logf("terraform commands of one nova run: %s", strings.Join(callsSeen, ", "))
}

// sideCost is what one side of BenchmarkRunNoChange spent.
type sideCost struct {
	wall, cpu    time.Duration
	calls        []tfCall
	bundle       string
	applySummary string
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

func (s sideCost) tfChildCPU() time.Duration {
	var d time.Duration
	for _, c := range s.calls {
		d += c.child
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
