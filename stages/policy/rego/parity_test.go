package rego

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// conftestDir writes the platform rules (without their tests, as New
// compiles them) and the conftest wrapper (testdata/bench/main.rego: one
// deny message per platform finding) into a directory for `conftest test -p`.
func conftestDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(Rules(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		src, err := fs.ReadFile(Rules(), p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), src, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	wrapper, err := os.ReadFile(filepath.Join("testdata", "bench", "main.rego"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.rego"), wrapper, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// conftestBin is conftest from the tools cache (.ci/tools.sh conftest).
func conftestBin(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("conftest")
	if err != nil {
		t.Fatalf("conftest is not on PATH: run .ci/tools.sh conftest and put its directory on PATH (%v)", err)
	}
	return bin
}

// writePayload writes a payload as conftest reads it: the JSON document
// the platform rules see.
func writePayload(t testing.TB, dir, name string, p runner.PolicyPayload) string {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// conftestFindings runs `conftest test` over files and returns each file's
// deny messages, sorted.
func conftestFindings(t testing.TB, policy string, files ...string) map[string][]string {
	t.Helper()
	args := append([]string{"test", "--output", "json", "--no-color", "-p", policy}, files...)
	out, err := exec.CommandContext(t.Context(), conftestBin(t), args...).Output()
	if _, failed := err.(*exec.ExitError); err != nil && !failed {
		t.Fatal(err)
	}
	var results []struct {
		Filename  string `json:"filename"`
		Namespace string `json:"namespace"`
		Failures  []struct {
			Msg string `json:"msg"`
		} `json:"failures"`
	}
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("reading conftest's output: %v\n%s", err, out)
	}
	got := map[string][]string{}
	for _, r := range results {
		msgs := []string{}
		for _, f := range r.Failures {
			msgs = append(msgs, f.Msg)
		}
		sort.Strings(msgs)
		got[r.Filename] = msgs
	}
	return got
}

// novaFindings are the platform's fail records in the wrapper's format:
// rule id, resource and message.
func novaFindings(t testing.TB, pcrs []runner.PCR) []string {
	t.Helper()
	msgs := []string{}
	for _, p := range pcrs {
		switch p.Result {
		case runner.PCRFail:
			msgs = append(msgs, fmt.Sprintf("%s %s: %s", p.RuleID, p.ResourceRef, p.Message))
		case runner.PCRError:
			t.Fatalf("rule %s could not be evaluated: %s", p.RuleID, p.Message)
		}
	}
	sort.Strings(msgs)
	return msgs
}

// TestPlatformRulesMatchConftest runs real conftest on the same rules and
// the same documents as Nova's in-process evaluation, and requires the same
// findings (rule, resource, message) from both: on the 500-change benchmark
// plan, on every plan fixture and on every contract fixture.
func TestPlatformRulesMatchConftest(t *testing.T) {
	payloads := map[string]runner.PolicyPayload{"bench-500.json": benchPayload(t)}
	plans, err := filepath.Glob(filepath.Join("testdata", "plan", "*.json"))
	if err != nil || len(plans) == 0 {
		t.Fatalf("no plan fixtures: %v", err)
	}
	for _, f := range plans {
		payloads["plan-"+filepath.Base(f)] = planPayload(t, filepath.Base(f))
	}
	pres, err := filepath.Glob(filepath.Join("testdata", "pre", "*.json"))
	if err != nil || len(pres) == 0 {
		t.Fatalf("no contract fixtures: %v", err)
	}
	for _, f := range pres {
		payloads["pre-"+filepath.Base(f)] = prePayload(t, filepath.Base(f))
	}
	payloads["pre-microservice.json"] = resolved(t, "microservice.yml")

	dir := t.TempDir()
	var files []string
	for name, p := range payloads {
		files = append(files, writePayload(t, dir, name, p))
	}
	want := conftestFindings(t, conftestDir(t), files...)
	e := newEngine(t)
	total := 0
	for name, p := range payloads {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, name)
			conftest, ok := want[file]
			if !ok {
				t.Fatalf("conftest reported nothing for %s", file)
			}
			got := novaFindings(t, evaluate(t, e, p))
			total += len(got)
			if diff := cmp.Diff(conftest, got); diff != "" {
				t.Errorf("Nova and conftest disagree (-conftest +nova):\n%s", diff)
			}
		})
	}
	// The comparison means something only if there are findings to
	// compare: every failing fixture has at least one.
	if total < len(payloads)/2 {
		t.Errorf("%d findings over %d documents: the fixtures no longer fail", total, len(payloads))
	}
}
