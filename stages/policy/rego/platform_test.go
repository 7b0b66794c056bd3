package rego

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// outcome is what the platform-rule tests assert of a record.
type outcome struct {
	RuleID      string
	Severity    runner.Severity
	Result      runner.PCRResult
	ResourceRef string
}

func outcomesOf(pcrs []runner.PCR, ruleID string) []outcome {
	var out []outcome
	for _, p := range pcrs {
		if p.RuleID == ruleID {
			out = append(out, outcome{p.RuleID, p.Severity, p.Result, p.ResourceRef})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ResourceRef < out[j].ResourceRef })
	return out
}

func fails(id string, sev runner.Severity, refs ...string) []outcome {
	out := make([]outcome, 0, len(refs))
	for _, r := range refs {
		out = append(out, outcome{id, sev, runner.PCRFail, r})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ResourceRef < out[j].ResourceRef })
	return out
}

// platformCases is every platform rule with its failing fixtures, before
// plan (testdata/pre/<pkg>-fail.json) and after (testdata/plan/<pkg>-fail.json),
// and the resources each must be reported against. The passing fixtures are
// the compliant microservice contract and its plan, on which every rule
// passes.
var platformCases = []struct {
	pkg      string
	id       string
	severity runner.Severity
	pre      func(testing.TB) runner.PolicyPayload
	preRefs  []string
	planRefs []string
}{
	{"secrets", "nova.secrets.plaintext", runner.Critical, pre("secrets-fail.json"), []string{"contract:/inputs/db_password"}, []string{"terraform_data.credentials"}},
	{"public_ingress", "nova.network.public-ingress", runner.High, pre("public_ingress-fail.json"), []string{"module.service"}, []string{"aws_security_group.ssh"}},
	{"public_bucket", "nova.storage.public-bucket", runner.Critical, pre("public_bucket-fail.json"), []string{"module.site"}, []string{"module.assets.aws_s3_bucket_public_access_block.this"}},
	{"public_lb", "nova.network.public-lb", runner.Medium, pre("public_lb-fail.json"), []string{"module.edge"}, []string{"module.edge.aws_lb.this"}},
	{"iam_wildcard", "nova.iam.wildcard", runner.High, pre("iam_wildcard-fail.json"), []string{"module.worker"}, []string{"module.worker.aws_iam_role_policy.admin"}},
	{"kms", "nova.encryption.kms-key", runner.High, pre("kms-fail.json"), []string{"contract:/inputs/kms_key_arn"}, []string{"module.table.aws_dynamodb_table.this"}},
	{"tags", "nova.tags.required", runner.Medium, pre("tags-fail.json"), []string{"module.message"}, []string{"module.assets.aws_s3_bucket.this"}},
	{"naming", "nova.naming.convention", runner.Low, pre("naming-fail.json"), []string{"module.table"}, []string{"module.assets.aws_s3_bucket.this"}},
}

func pre(file string) func(testing.TB) runner.PolicyPayload {
	return func(t testing.TB) runner.PolicyPayload { return prePayload(t, file) }
}

func newEngine(t testing.TB, opts ...Option) *Engine {
	t.Helper()
	e, err := New(t.Context(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func evaluate(t testing.TB, e *Engine, p runner.PolicyPayload) []runner.PCR {
	t.Helper()
	pcrs, err := e.Evaluate(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	return pcrs
}

func TestPlatformRules(t *testing.T) {
	e := newEngine(t)
	compliantPre := evaluate(t, e, resolved(t, "microservice.yml"))
	compliantPlan := evaluate(t, e, planPayload(t, "microservice-pass.json"))
	for _, tc := range platformCases {
		t.Run(tc.pkg+"/pre-plan/pass", func(t *testing.T) {
			want := []outcome{{tc.id, tc.severity, runner.PCRPass, "contract"}}
			if diff := cmp.Diff(want, outcomesOf(compliantPre, tc.id)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
		t.Run(tc.pkg+"/pre-plan/fail", func(t *testing.T) {
			got := outcomesOf(evaluate(t, e, tc.pre(t)), tc.id)
			if diff := cmp.Diff(fails(tc.id, tc.severity, tc.preRefs...), got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
		t.Run(tc.pkg+"/post-plan/pass", func(t *testing.T) {
			want := []outcome{{tc.id, tc.severity, runner.PCRPass, "plan"}}
			if diff := cmp.Diff(want, outcomesOf(compliantPlan, tc.id)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
		t.Run(tc.pkg+"/post-plan/fail", func(t *testing.T) {
			got := outcomesOf(evaluate(t, e, planPayload(t, tc.pkg+"-fail.json")), tc.id)
			if diff := cmp.Diff(fails(tc.id, tc.severity, tc.planRefs...), got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// TestSensitivePlanValuePasses: a real Terraform plan where the password
// comes from a sensitive variable is not a plaintext secret.
func TestSensitivePlanValuePasses(t *testing.T) {
	got := outcomesOf(evaluate(t, newEngine(t), planPayload(t, "secrets-sensitive-pass.json")), "nova.secrets.plaintext")
	want := []outcome{{"nova.secrets.plaintext", runner.Critical, runner.PCRPass, "plan"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestEveryPlatformRuleHasFixtures: a rule added without fixtures fails here.
func TestEveryPlatformRuleHasFixtures(t *testing.T) {
	var got, want []string
	for _, r := range mustRules(t) {
		got = append(got, r.ID+" "+string(r.Severity))
	}
	for _, tc := range platformCases {
		want = append(want, tc.id+" "+string(tc.severity))
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("platform rules without a fixture case (-cases +rules)\n%s", diff)
	}
}

// TestSecretValuesNeverReachRecords: a record shows where a secret is, never
// the secret.
func TestSecretValuesNeverReachRecords(t *testing.T) {
	e := newEngine(t)
	for _, p := range []runner.PolicyPayload{prePayload(t, "secrets-fail.json"), planPayload(t, "secrets-fail.json")} {
		for _, r := range evaluate(t, e, p) {
			for _, s := range []string{r.Message, string(r.Evidence), r.ResourceRef} {
				if contains(s, "hunter2") {
					t.Errorf("record %s leaks the secret: %q", r.RuleID, s)
				}
			}
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestDuplicateAddressesStillEvaluate: a plan listing one address twice
// (hand-made, or a tool's) must not make the rules fail to evaluate, and
// the second entry must not hide behind the first: its plaintext secret is
// still a critical failure.
func TestDuplicateAddressesStillEvaluate(t *testing.T) {
	p := resolved(t, "microservice.yml")
	p.Phase = runner.PostPlan
	p.Plan = []byte(`{"format_version": "1.2", "resource_changes": [
		{"address": "terraform_data.config", "mode": "managed", "type": "terraform_data", "name": "config",
		 "change": {"actions": ["create"], "after": {"input": {"username": "app"}}, "after_unknown": {}, "after_sensitive": {}}},
		{"address": "terraform_data.config", "mode": "managed", "type": "terraform_data", "name": "config",
		 "change": {"actions": ["create"], "after": {"input": {"password": "hunter2-not-a-real-one"}}, "after_unknown": {}, "after_sensitive": {}}}
	]}`)
	pcrs := evaluate(t, newEngine(t), p)
	for _, r := range pcrs {
		if r.Result == runner.PCRError {
			t.Errorf("rule %s could not evaluate: %s", r.RuleID, r.Message)
		}
	}
	got := outcomesOf(pcrs, "nova.secrets.plaintext")
	want := fails("nova.secrets.plaintext", runner.Critical, "terraform_data.config (resource_changes[1])")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestARuleThatCannotEvaluateIsAnErrorOfItsOwnSeverity: a rule whose
// evaluation fails is one error record carrying that rule's severity (a
// critical one then blocks the run); the other rules still report.
func TestARuleThatCannotEvaluateIsAnErrorOfItsOwnSeverity(t *testing.T) {
	sources, err := ruleSources(false)
	if err != nil {
		t.Fatal(err)
	}
	sources["broken.rego"] = `package nova.platform.broken

rule := {"id": "nova.test.broken", "severity": "critical", "title": "Always conflicts"}

findings := set()

# Two values for one complete rule: eval_conflict_error on every input.
checked := n if some n in [1, 2]
`
	p, err := compileSources(t.Context(), sources)
	if err != nil {
		t.Fatal(err)
	}
	pcrs := evaluate(t, &Engine{platform: func() (*platform, error) { return p, nil }}, planPayload(t, "microservice-pass.json"))
	if diff := cmp.Diff([]outcome{{"nova.test.broken", runner.Critical, runner.PCRError, ""}}, outcomesOf(pcrs, "nova.test.broken")); diff != "" {
		t.Errorf("the broken rule (-want +got)\n%s", diff)
	}
	for _, tc := range platformCases {
		want := []outcome{{tc.id, tc.severity, runner.PCRPass, "plan"}}
		if diff := cmp.Diff(want, outcomesOf(pcrs, tc.id)); diff != "" {
			t.Errorf("%s beside the broken rule (-want +got)\n%s", tc.id, diff)
		}
	}
}

// TestAnUnreadablePlanIsAnErrorPerRule: when the input cannot even be
// built, every platform rule reports an error with its own severity, not
// one engine error of severity high that nothing blocks on.
func TestAnUnreadablePlanIsAnErrorPerRule(t *testing.T) {
	p := planPayload(t, "microservice-pass.json")
	p.Plan = []byte(`{"resource_changes": [`)
	pcrs, err := newEngine(t).Evaluate(t.Context(), p)
	if err == nil {
		t.Error("no engine error for an unreadable plan")
	}
	for _, tc := range platformCases {
		want := []outcome{{tc.id, tc.severity, runner.PCRError, ""}}
		if diff := cmp.Diff(want, outcomesOf(pcrs, tc.id)); diff != "" {
			t.Errorf("%s (-want +got)\n%s", tc.id, diff)
		}
	}
}
