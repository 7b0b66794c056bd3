package rego

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
)

// plan500 builds a plan of n resource changes by repeating the compliant
// microservice plan's resources under new module names; every fifth
// service's log group loses its KMS key, so the rules have findings to
// report as they would on a real large change.
func plan500(t testing.TB, n int) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "plan", "microservice-pass.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	templates := p["resource_changes"].([]any)
	var changes []any
	for copyNo := 0; len(changes) < n; copyNo++ {
		for _, tmpl := range templates {
			if len(changes) == n {
				break
			}
			raw, _ := json.Marshal(tmpl)
			s := string(raw)
			for _, m := range []string{"service", "assets", "table"} {
				s = strings.ReplaceAll(s, "module."+m+".", fmt.Sprintf("module.%s%03d.", m, copyNo))
				s = strings.ReplaceAll(s, `"module.`+m+`"`, fmt.Sprintf(`"module.%s%03d"`, m, copyNo))
			}
			var rc map[string]any
			if err := json.Unmarshal([]byte(s), &rc); err != nil {
				t.Fatal(err)
			}
			if copyNo%5 == 0 && rc["type"] == "aws_cloudwatch_log_group" {
				rc["change"].(map[string]any)["after"].(map[string]any)["kms_key_id"] = nil
			}
			changes = append(changes, rc)
		}
	}
	p["resource_changes"] = changes
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func benchPayload(b testing.TB) runner.PolicyPayload {
	p := resolved(b, "microservice.yml")
	p.Phase, p.Plan = runner.PostPlan, plan500(b, 500)
	return p
}

// BenchmarkPolicyPlan500 is the built-in rules over a plan of 500 resource
// changes, in-process, with the queries prepared once (as in a run).
func BenchmarkPolicyPlan500(b *testing.B) {
	e := newEngine(b)
	p := benchPayload(b)
	for b.Loop() {
		if _, err := e.Evaluate(b.Context(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPolicyPlan14 is the same over the 14 changes of one
// microservice: a typical change, where a tool's start-up cost dominates.
func BenchmarkPolicyPlan14(b *testing.B) {
	e := newEngine(b)
	p := planPayload(b, "microservice-pass.json")
	for b.Loop() {
		if _, err := e.Evaluate(b.Context(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPolicyPlan500Cold also compiles the rules on every iteration: the
// in-process cost of a process that evaluates only once. New shares one
// compilation per process, so the engine is built from a fresh one here.
func BenchmarkPolicyPlan500Cold(b *testing.B) {
	p := benchPayload(b)
	for b.Loop() {
		plat, err := compilePlatform(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		e := &Engine{platform: func() (*platform, error) { return plat, nil }}
		if _, err := e.Evaluate(b.Context(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPolicyVsConftest500 measures both sides of the comparison in
// one run, alternating: Nova evaluating the platform rules over the
// 500-change plan as a process's first evaluation does (OPA compiles the
// rules, then evaluates them) and `conftest test` on the same rules and
// the same document, which parses and compiles them in every process. It
// reports each side's wall and CPU time per evaluation and conftest's
// over Nova's (x-wall, x-cpu: above 1, Nova is faster); CPU time is the
// steadier figure on a loaded machine.
func BenchmarkPolicyVsConftest500(b *testing.B) { benchVsConftest(b, benchPayload(b)) }

// BenchmarkPolicyVsConftest14 is the same on one microservice's 14 changes.
func BenchmarkPolicyVsConftest14(b *testing.B) {
	benchVsConftest(b, planPayload(b, "microservice-pass.json"))
}

func benchVsConftest(b *testing.B, p runner.PolicyPayload) {
	file := writePayload(b, b.TempDir(), "payload.json", p)
	cmd := []string{conftestBin(b), "test", "--no-color", "-p", conftestDir(b), file}
	want := len(novaFindings(b, evaluate(b, newEngine(b), p)))
	var novaWall, novaCPU, confWall, confCPU time.Duration
	for b.Loop() {
		wall, cpu := time.Now(), processCPU(b)
		plat, err := compilePlatform(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		e := &Engine{platform: func() (*platform, error) { return plat, nil }}
		if _, err := e.Evaluate(b.Context(), p); err != nil {
			b.Fatal(err)
		}
		novaWall += time.Since(wall)
		novaCPU += processCPU(b) - cpu

		c := exec.CommandContext(b.Context(), cmd[0], cmd[1:]...)
		wall = time.Now()
		out, err := c.Output()
		confWall += time.Since(wall)
		// conftest exits 1 when it finds failures; the count must be Nova's.
		if _, failed := err.(*exec.ExitError); err != nil && !failed {
			b.Fatal(err)
		}
		if got := strings.Count(string(out), "FAIL - "); got != want {
			b.Fatalf("conftest reported %d failures, Nova %d:\n%s", got, want, out)
		}
		confCPU += c.ProcessState.UserTime() + c.ProcessState.SystemTime()
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	b.ReportMetric(ms(novaWall), "nova-ms")
	b.ReportMetric(ms(confWall), "conftest-ms")
	b.ReportMetric(float64(confWall)/float64(novaWall), "x-wall")
	b.ReportMetric(ms(novaCPU), "nova-cpu-ms")
	b.ReportMetric(ms(confCPU), "conftest-cpu-ms")
	b.ReportMetric(float64(confCPU)/float64(novaCPU), "x-cpu")
}

// processCPU is the CPU time this process has used, garbage collection
// included.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestPlan500HasFindings(t *testing.T) {
	pcrs := evaluate(t, newEngine(t), benchPayload(t))
	fails := 0
	for _, p := range pcrs {
		if p.Result == runner.PCRFail {
			fails++
		}
	}
	// 39 copies of the microservice, one log group without a key in every
	// fifth: the benchmark measures rules that find things.
	if fails != 8 {
		t.Errorf("%d failing records on the benchmark plan, want 8", fails)
	}
}

// BenchmarkPlatformCompile is what a process spends on the platform rules
// before their first evaluation: OPA compiles them and prepares the query.
func BenchmarkPlatformCompile(b *testing.B) {
	for b.Loop() {
		if _, err := compilePlatform(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}
