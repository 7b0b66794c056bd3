package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// policyRepo is a consumer checkout with a hello contract; audience goes
// into the contract as written.
func policyRepo(t *testing.T, audience string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), `apiVersion: nova/v1
id: 0c0ffee0-1111-4222-8333-444455556666
stack: hello
environment: dev
inputs:
  audience: `+audience+`
nfr:
  dataClassification: public
  monthlyCostCeiling: 10
`)
	return dir
}

func runPolicy(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	absent := filepath.Join(t.TempDir(), "absent")
	// External tools are pinned to paths that do not exist, so the test
	// does not depend on what this machine has installed.
	args = append([]string{"--checkov", absent, "--kyverno-json", absent, "--infracost", absent}, args...)
	code := exitCode(run(t.Context(), Env{
		Args:   append([]string{"policy"}, args...),
		Getenv: func(k string) string { return vars[k] },
		Stdout: &stdout, Stderr: &stderr,
	}))
	return code, stdout.String(), stderr.String()
}

type policyRecord struct {
	Engine, RuleID string
	Result         runner.PCRResult
}

func TestPolicyJSON(t *testing.T) {
	code, stdout, stderr := runPolicy(t, nil, "--dir", policyRepo(t, "world"), "--output", "json")
	if code != ExitPass {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var doc struct {
		PCRs []runner.PCR
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, stdout)
	}
	var got []policyRecord
	for _, p := range doc.PCRs {
		if p.Engine != runner.EngineRego || !strings.HasPrefix(p.RuleID, "nova.") || p.RuleID == "nova.meta.block-on-any-critical" {
			got = append(got, policyRecord{p.Engine, p.RuleID, p.Result})
		}
	}
	want := []policyRecord{
		{"checkov", "CHECKOV_NOT_CONFIGURED", runner.PCRSkipped},
		{"kyverno", "KJ_ENGINE_NOT_CONFIGURED", runner.PCRSkipped},
		{"rego", "nova.meta.block-on-any-critical", runner.PCRPass},
		{"nfr", "nfr.dataClassification", runner.PCRPass},
		{"nfr", "nfr.monthlyCostCeiling", runner.PCRSkipped},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	for _, stage := range []string{"schema", "policy", "nfr"} {
		if !strings.Contains(stderr, "  "+stage) {
			t.Errorf("no progress line for %s on stderr:\n%s", stage, stderr)
		}
	}
}

func TestPolicyCriticalFailureBlocks(t *testing.T) {
	code, stdout, stderr := runPolicy(t, nil, "--dir", policyRepo(t, "AKIAABCDEFGHIJKLMNOP"))
	if code != ExitFail {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitFail, stdout, stderr)
	}
	for _, want := range []string{"nova.secrets.plaintext", "contract:/inputs/audience", "critical"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, string(runner.PolicyCriticalFail)) || !strings.Contains(stderr, ".nova/contract.yml:6") {
		t.Errorf("stderr does not explain the block at the contract line:\n%s", stderr)
	}
	if strings.Contains(stdout+stderr, "AKIAABCDEFGHIJKLMNOP") {
		t.Error("the secret itself was printed")
	}
}

func TestPolicySARIFAndAnnotations(t *testing.T) {
	dir := policyRepo(t, "AKIAABCDEFGHIJKLMNOP")
	out := filepath.Join(t.TempDir(), "nova.sarif")
	code, stdout, _ := runPolicy(t, map[string]string{"GITHUB_ACTIONS": "true"}, "--dir", dir, "--output", "sarif", "--out", out)
	if code != ExitFail {
		t.Fatalf("exit %d", code)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var sarif struct {
		Version string
		Runs    []struct{ Results []struct{ RuleID string } }
	}
	if err := json.Unmarshal(data, &sarif); err != nil || sarif.Version != "2.1.0" || len(sarif.Runs) != 1 {
		t.Fatalf("not a SARIF log: %v\n%s", err, data)
	}
	if len(sarif.Runs[0].Results) == 0 || sarif.Runs[0].Results[0].RuleID != "nova.secrets.plaintext" {
		t.Errorf("results %+v", sarif.Runs[0].Results)
	}
	want := "::error file=.nova/contract.yml,line=6,title=nova.secrets.plaintext (critical%2C rego)::contract:/inputs/audience: "
	if !strings.HasPrefix(stdout, want) {
		t.Errorf("annotations on stdout:\n%s\nwant a first line starting %q", stdout, want)
	}
}

func TestPolicyJUnit(t *testing.T) {
	code, stdout, _ := runPolicy(t, nil, "--dir", policyRepo(t, "world"), "--output", "junit")
	if code != ExitPass {
		t.Fatalf("exit %d", code)
	}
	var suites struct {
		Tests int `xml:"tests,attr"`
	}
	if err := xml.Unmarshal([]byte(stdout), &suites); err != nil || suites.Tests == 0 {
		t.Errorf("JUnit: %v, %d tests\n%s", err, suites.Tests, stdout)
	}
}

func TestPolicyWithPlan(t *testing.T) {
	dir := policyRepo(t, "world")
	plan := filepath.Join(dir, "plan.json")
	writeFile(t, plan, `{"format_version":"1.2","terraform_version":"1.11.4","resource_changes":[
	  {"address":"aws_lb.edge","mode":"managed","type":"aws_lb","name":"edge","change":{"actions":["create"],"after":{"name":"edge-dev","internal":false},"after_unknown":{}}}]}`)
	code, stdout, stderr := runPolicy(t, nil, "--dir", dir, "--plan", plan, "--engines", "rego")
	if code != ExitPass {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "plan-policy") || !strings.Contains(stdout, "nova.network.public-lb") || !strings.Contains(stdout, "aws_lb.edge") {
		t.Errorf("plan-level rules did not run:\n%s\n%s", stdout, stderr)
	}
	if strings.Contains(stdout, "CHECKOV_NOT_CONFIGURED") {
		t.Error("--engines rego still ran checkov")
	}
}

func TestPolicyErrors(t *testing.T) {
	badConfig := policyRepo(t, "world")
	writeFile(t, filepath.Join(badConfig, ".nova", "config.yml"), "policy:\n  engines: [opa]\n")
	tests := []struct {
		name, mention string
		args          []string
	}{
		{"unknown output", string(runner.ConfigInvalid), []string{"--output", "html"}},
		{"bad config file", string(runner.PolicyConfigInvalid), []string{"--dir", badConfig}},
		{"unknown engine flag", string(runner.PolicyConfigInvalid), []string{"--engines", "rego,semgrep"}},
		{"missing plan", string(runner.ConfigInvalid), []string{"--plan", filepath.Join(t.TempDir(), "none.json")}},
		{"stray argument", "unexpected argument", []string{"extra"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--dir", policyRepo(t, "world")}, tc.args...)
			code, _, stderr := runPolicy(t, nil, args...)
			if code != ExitError || !strings.Contains(stderr, tc.mention) {
				t.Errorf("exit %d stderr %q, want exit 2 mentioning %q", code, stderr, tc.mention)
			}
		})
	}
}

func TestPolicyInvalidContract(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), "apiVersion: nova/v1\nid: 0c0ffee0-1111-4222-8333-444455556666\nstack: hello\nenviroment: dev\n")
	code, stdout, stderr := runPolicy(t, nil, "--dir", dir, "--output", "json")
	if code != ExitFail || !strings.Contains(stderr, string(runner.ContractUnknownField)) {
		t.Errorf("exit %d stderr %q", code, stderr)
	}
	if !json.Valid([]byte(stdout)) {
		t.Errorf("stdout is not JSON even without records: %q", stdout)
	}
}

func TestPolicyExitsTwoWhenAnEngineCouldNotEvaluate(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), helloContract("world", "dev"))
	// A consumer policy that does not compile: the evaluation is incomplete.
	writeFile(t, filepath.Join(dir, ".nova", "policy", "broken.rego"), "package contract\n\ndeny contains msg if {\n")
	var stdout, stderr bytes.Buffer
	code := exitCode(run(t.Context(), Env{Args: []string{"policy", "--dir", dir}, Getenv: func(string) string { return "" }, Stdout: &stdout, Stderr: &stderr}))
	if code != ExitError {
		t.Errorf("exit %d, want %d for an incomplete evaluation\n%s\n%s", code, ExitError, stdout.String(), stderr.String())
	}
}
