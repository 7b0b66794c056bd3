package rego

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// conftestResult is one file's entry in `conftest test --output json`.
type conftestResult struct {
	Failures []struct {
		Msg string `json:"msg"`
	} `json:"failures"`
	Warnings []struct {
		Msg string `json:"msg"`
	} `json:"warnings"`
}

// messages is what conftest reports, and what Nova must report the same.
type messages struct {
	Failures []string
	Warnings []string
}

func parseConftest(t testing.TB, data []byte) messages {
	t.Helper()
	var results []conftestResult
	if err := json.Unmarshal(data, &results); err != nil {
		t.Fatalf("reading conftest output: %v\n%s", err, data)
	}
	var m messages
	for _, r := range results {
		for _, f := range r.Failures {
			m.Failures = append(m.Failures, f.Msg)
		}
		for _, w := range r.Warnings {
			m.Warnings = append(m.Warnings, w.Msg)
		}
	}
	sort.Strings(m.Failures)
	sort.Strings(m.Warnings)
	return m
}

// novaMessages sorts Nova's consumer records the way conftest does: warn
// rules give warnings, deny and violation rules failures.
func novaMessages(pcrs []runner.PCR) messages {
	var m messages
	for _, p := range pcrs {
		if !strings.HasPrefix(p.RuleID, "consumer.") || p.Result != runner.PCRFail {
			continue
		}
		name := p.RuleID[strings.LastIndex(p.RuleID, ".")+1:]
		if warningRule().MatchString(name) {
			m.Warnings = append(m.Warnings, p.Message)
		} else {
			m.Failures = append(m.Failures, p.Message)
		}
	}
	sort.Strings(m.Failures)
	sort.Strings(m.Warnings)
	return m
}

func consumerEngine(t testing.TB, fsys fsOrDir) *Engine {
	t.Helper()
	return newEngine(t, WithConsumerPolicies(fsys.fs(), ".nova/policy"))
}

// TestConsumerPoliciesMatchConftest evaluates a conftest-style policy dir
// and compares the messages with what `conftest test` printed for the same
// policies and input (recorded in testdata/consumer/conftest-*.json with
// conftest v0.71.1; regenerate with the commands in docs/policy.md).
func TestConsumerPoliciesMatchConftest(t *testing.T) {
	e := consumerEngine(t, dir("testdata/consumer/policy"))
	tests := []struct {
		name     string
		payload  runner.PolicyPayload
		recorded string
	}{
		{"plan/namespace main", planPayload(t, "microservice-pass.json"), "conftest-plan.json"},
		{"contract/namespace contract", resolved(t, "microservice.yml"), "conftest-contract.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "consumer", tc.recorded))
			if err != nil {
				t.Fatal(err)
			}
			want := parseConftest(t, data)
			if len(want.Failures)+len(want.Warnings) == 0 {
				t.Fatal("the recorded conftest output has no findings to compare")
			}
			if diff := cmp.Diff(want, novaMessages(evaluate(t, e, tc.payload))); diff != "" {
				t.Errorf("Nova and conftest disagree (-conftest +nova)\n%s", diff)
			}
		})
	}
}

// TestConsumerPoliciesMatchLiveConftest runs conftest itself (.ci/tools.sh
// conftest installs it), so the recorded output cannot drift from the real
// tool.
func TestConsumerPoliciesMatchLiveConftest(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), conftestBin(t), "test", "--output", "json", "--no-color", "-p", "policy", filepath.Join("..", "plan", "microservice-pass.json"))
	cmd.Dir = filepath.Join("testdata", "consumer")
	out, err := cmd.Output()
	if _, failed := err.(*exec.ExitError); err != nil && !failed {
		t.Fatal(err)
	}
	want := parseConftest(t, out)
	got := novaMessages(evaluate(t, consumerEngine(t, dir("testdata/consumer/policy")), planPayload(t, "microservice-pass.json")))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Nova and conftest disagree (-conftest +nova)\n%s", diff)
	}
}

func TestConsumerRecords(t *testing.T) {
	pcrs := evaluate(t, consumerEngine(t, dir("testdata/consumer/policy")), planPayload(t, "microservice-pass.json"))
	var got []outcome
	for _, p := range pcrs {
		if strings.HasPrefix(p.RuleID, "consumer.") {
			got = append(got, outcome{p.RuleID, p.Severity, p.Result, p.ResourceRef})
		}
	}
	want := []outcome{
		{"consumer.main.deny", runner.High, runner.PCRFail, "plan"},
		// severity from the rule's METADATA block; it found nothing.
		{"consumer.main.deny_public_ip", runner.Critical, runner.PCRPass, "plan"},
		// resourceRef and severity from the rule's metadata.
		{"consumer.main.violation", runner.Medium, runner.PCRFail, "module.service.aws_cloudwatch_log_group.this"},
		{"consumer.main.warn", runner.Low, runner.PCRFail, "plan"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestConsumerCannotOverridePlatformRules: a consumer package named like a
// platform package is refused, and the platform rule still reports.
func TestConsumerCannotOverridePlatformRules(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		reason runner.Reason
	}{
		{"same package as a platform rule", "package nova.platform.secrets\n\nfindings := set()\n", runner.PolicyNamespaceReserved},
		{"the platform's helper package", "package nova.lib\n\npre_plan := false\n", runner.PolicyNamespaceReserved},
		{"the nova root", "package nova\n\nx := 1\n", runner.PolicyNamespaceReserved},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := consumerEngine(t, mapFS{"override.rego": tc.policy})
			pcrs, err := e.Evaluate(t.Context(), prePayload(t, "secrets-fail.json"))
			if got := runner.ReasonOf(err); got != tc.reason {
				t.Fatalf("error %v has reason %s, want %s", err, got, tc.reason)
			}
			want := fails("nova.secrets.plaintext", runner.Critical, "contract:/inputs/db_password")
			if diff := cmp.Diff(want, outcomesOf(pcrs, "nova.secrets.plaintext")); diff != "" {
				t.Errorf("platform rule changed (-want +got)\n%s", diff)
			}
		})
	}
}

// TestConsumerIsIsolatedFromPlatform: a consumer rule cannot see platform
// rules (they are compiled apart), nor report under a platform rule id.
func TestConsumerIsIsolatedFromPlatform(t *testing.T) {
	policy := `package contract

deny contains msg if {
	count(data.nova.platform.secrets.findings) >= 0
	msg := "platform rules are visible to consumer policies"
}

violation contains {"msg": "posing as a platform rule", "ruleId": "nova.secrets.plaintext", "severity": "info"} if true
`
	pcrs := evaluate(t, consumerEngine(t, mapFS{"sneaky.rego": policy}), prePayload(t, "secrets-fail.json"))
	for _, p := range pcrs {
		if strings.Contains(p.Message, "visible") {
			t.Errorf("a consumer rule read platform data: %+v", p)
		}
		if p.RuleID == "nova.secrets.plaintext" && p.Result != runner.PCRFail {
			t.Errorf("the platform rule's record changed: %+v", p)
		}
	}
	got := outcomesOf(pcrs, "consumer.contract.violation")
	want := []outcome{{"consumer.contract.violation", runner.Info, runner.PCRFail, "contract"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestConsumerPolicyErrors(t *testing.T) {
	tests := []struct {
		name, policy string
		reason       runner.Reason
		mention      string
	}{
		{"syntax error", "package main\n\ndeny contains msg if {\n", runner.PolicyCompileFailed, "plan.rego"},
		{"boolean deny", "package main\n\ndeny if { true }\n", runner.PolicyCompileFailed, "without `contains`"},
		{"network access", "package main\n\ndeny contains msg if {\n\tr := http.send({\"method\": \"get\", \"url\": \"http://127.0.0.1\"})\n\tmsg := r.body\n}\n", runner.PolicyCompileFailed, "http.send"},
		{"unknown severity", "package main\n\n# METADATA\n# custom:\n#   severity: urgent\ndeny contains \"x\" if { true }\n", runner.PolicyCompileFailed, "urgent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := consumerEngine(t, mapFS{"plan.rego": tc.policy})
			pcrs, err := e.Evaluate(t.Context(), planPayload(t, "microservice-pass.json"))
			if got := runner.ReasonOf(err); got != tc.reason {
				t.Fatalf("error %v has reason %s, want %s", err, got, tc.reason)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
			if len(outcomesOf(pcrs, "nova.secrets.plaintext")) != 1 {
				t.Errorf("platform rules did not run: %d records", len(pcrs))
			}
		})
	}
}

func TestConsumerException(t *testing.T) {
	policy := `package main

deny_replicas contains "run more replicas" if true

exception contains rules if {
	rules := ["replicas"]
}
`
	got := outcomesOf(evaluate(t, consumerEngine(t, mapFS{"plan.rego": policy}), planPayload(t, "microservice-pass.json")), "consumer.main.deny_replicas")
	want := []outcome{{"consumer.main.deny_replicas", runner.High, runner.PCRSkipped, "plan"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// fsOrDir lets tests give policies as a directory or inline.
type fsOrDir interface{ fs() fstest.MapFS }

type dir string

func (d dir) fs() fstest.MapFS {
	out := fstest.MapFS{}
	entries, _ := os.ReadDir(string(d))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(string(d), e.Name()))
		if err == nil {
			out[e.Name()] = &fstest.MapFile{Data: data}
		}
	}
	return out
}

type mapFS map[string]string

func (m mapFS) fs() fstest.MapFS {
	out := fstest.MapFS{}
	for k, v := range m {
		out[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return out
}
