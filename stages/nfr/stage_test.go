package nfr

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/schema"
)

var testTime = time.Date(2025, 11, 29, 18, 0, 0, 0, time.UTC)

func reg(t testing.TB) *registry.Registry {
	t.Helper()
	r, err := registry.Load(registry.Embedded())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// microservice is the testdata contract with nfr and extra inputs, resolved
// through the registry shipped with Nova.
func microservice(t testing.TB, nfr runner.NFR, inputs map[string]any) *runner.State {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "microservice.yml"))
	if err != nil {
		t.Fatal(err)
	}
	c, findings := schema.Parse(data, "microservice.yml", "")
	if len(findings) > 0 {
		t.Fatalf("%+v", findings)
	}
	for k, v := range inputs {
		c.Inputs[k] = v
	}
	c.NFR = &nfr
	return resolve(t, c)
}

func resolve(t testing.TB, c *runner.Contract) *runner.State {
	t.Helper()
	target, findings := reg(t).Resolve(c)
	if len(findings) > 0 {
		t.Fatalf("%+v", findings)
	}
	return &runner.State{Contract: c, Target: target}
}

func ptr[T any](v T) *T { return &v }

type outcome struct {
	RuleID   string
	Severity runner.Severity
	Result   runner.PCRResult
	Status   string
	Reason   runner.Reason
}

func outcomes(pcrs []runner.PCR) []outcome {
	out := make([]outcome, 0, len(pcrs))
	for _, p := range pcrs {
		var ev struct{ Status string }
		_ = json.Unmarshal(p.Evidence, &ev)
		out = append(out, outcome{p.RuleID, p.Severity, p.Result, ev.Status, runner.PCRReason(p)})
	}
	return out
}

func runStage(t *testing.T, st *runner.State, opts ...Option) runner.Result {
	t.Helper()
	res, err := New(reg(t), append(opts, WithClock(func() time.Time { return testTime }))...).Run(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestNFRsAgainstCapabilities(t *testing.T) {
	satisfied := func(id string, sev runner.Severity) outcome {
		return outcome{id, sev, runner.PCRPass, Satisfied, ""}
	}
	unmet := func(id string, sev runner.Severity) outcome {
		return outcome{id, sev, runner.PCRFail, NotSatisfied, runner.NFRNotSatisfied}
	}
	impossible := func(id string, sev runner.Severity) outcome {
		return outcome{id, sev, runner.PCRFail, NotSatisfiable, runner.NFRNotSatisfiable}
	}
	tests := []struct {
		name   string
		nfr    runner.NFR
		inputs map[string]any
		want   []outcome
	}{
		{"met by the modules' defaults and the contract's key", runner.NFR{EncryptionAtRest: ptr(true), Backups: ptr(true), MultiAZ: ptr(true), RPOMinutes: ptr(15)},
			nil, []outcome{
				satisfied("nfr.rpoMinutes", runner.High), satisfied("nfr.encryptionAtRest", runner.High),
				satisfied("nfr.backups", runner.High), satisfied("nfr.multiAz", runner.Medium),
			}},
		{"one task is not multi-AZ", runner.NFR{MultiAZ: ptr(true)}, map[string]any{"desired_count": json.Number("1")},
			[]outcome{unmet("nfr.multiAz", runner.Medium)}},
		{"an RPO tighter than point-in-time recovery gives", runner.NFR{RPOMinutes: ptr(1)}, nil,
			[]outcome{unmet("nfr.rpoMinutes", runner.High)}},
		{"no key, so no encryption at rest", runner.NFR{EncryptionAtRest: ptr(true)}, map[string]any{"kms_key_arn": ""},
			[]outcome{unmet("nfr.encryptionAtRest", runner.High)}},
		{"unencrypted confidential data is critical", runner.NFR{EncryptionAtRest: ptr(true), DataClassification: "confidential"}, map[string]any{"kms_key_arn": ""},
			[]outcome{{"nfr.encryptionAtRest", runner.Critical, runner.PCRFail, NotSatisfied, runner.NFRNotSatisfied}, impossible("nfr.dataClassification", runner.High)}},
		{"confidential data is held to encryption it does not declare", runner.NFR{DataClassification: "confidential"}, map[string]any{"kms_key_arn": ""},
			[]outcome{{"nfr.encryptionAtRest", runner.Critical, runner.PCRFail, NotSatisfied, runner.NFRNotSatisfied}, impossible("nfr.dataClassification", runner.High)}},
		{"restricted data, encrypted without declaring it", runner.NFR{DataClassification: "restricted"}, nil,
			[]outcome{satisfied("nfr.encryptionAtRest", runner.High), impossible("nfr.dataClassification", runner.High)}},
		{"restricted data declared unencrypted, on an encrypting stack", runner.NFR{EncryptionAtRest: ptr(false), DataClassification: "restricted"}, nil,
			[]outcome{{"nfr.encryptionAtRest", runner.Critical, runner.PCRFail, NotSatisfied, runner.NFRNotSatisfied}, impossible("nfr.dataClassification", runner.High)}},
		{"internal data asks for no encryption", runner.NFR{DataClassification: "internal"}, map[string]any{"kms_key_arn": ""},
			[]outcome{impossible("nfr.dataClassification", runner.High)}},
		{"capabilities no module declares", runner.NFR{Availability: ptr(99.9), RTOMinutes: ptr(60), LatencyP99Ms: ptr(200)}, nil,
			[]outcome{impossible("nfr.availability", runner.High), impossible("nfr.rtoMinutes", runner.High), impossible("nfr.latencyP99Ms", runner.Medium)}},
		{"requirements that ask for nothing", runner.NFR{EncryptionAtRest: ptr(false), DataClassification: "public"}, nil,
			[]outcome{satisfied("nfr.encryptionAtRest", runner.High), satisfied("nfr.dataClassification", runner.High)}},
		{"nothing declared", runner.NFR{}, nil, []outcome{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := microservice(t, tc.nfr, tc.inputs)
			res := runStage(t, st)
			if diff := cmp.Diff(tc.want, outcomes(res.PCRs)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			for _, p := range res.PCRs {
				if p.Engine != runner.EngineNFR || !strings.HasPrefix(p.ResourceRef, "contract:/nfr/") {
					t.Errorf("record %+v", p)
				}
			}
		})
	}
}

func TestMessagesNameTheInstanceAndInput(t *testing.T) {
	res := runStage(t, microservice(t, runner.NFR{MultiAZ: ptr(true)}, map[string]any{"desired_count": json.Number("1")}))
	want := "multiAz true is not met: service (ecs-service): desired_count is 1 (set by the stack or contract); it must be at least 2"
	if got := res.PCRs[0].Message; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

func TestProviderFreeStackSatisfiesNothing(t *testing.T) {
	c := &runner.Contract{APIVersion: "nova/v1", ID: "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90", Stack: "hello", Environment: runner.Dev,
		Inputs: map[string]any{"audience": "Nova"}, NFR: &runner.NFR{EncryptionAtRest: ptr(true)}}
	res := runStage(t, resolve(t, c))
	want := []outcome{{"nfr.encryptionAtRest", runner.High, runner.PCRFail, NotSatisfiable, runner.NFRNotSatisfiable}}
	if diff := cmp.Diff(want, outcomes(res.PCRs)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestCriticalNFRFailsTheStage(t *testing.T) {
	st := microservice(t, runner.NFR{EncryptionAtRest: ptr(true), DataClassification: "restricted"}, map[string]any{"kms_key_arn": ""})
	res := runStage(t, st)
	if res.Verdict != runner.Fail || len(res.Findings) != 1 || res.Findings[0].Reason != runner.PolicyCriticalFail || res.Findings[0].Field != "/nfr/encryptionAtRest" {
		t.Errorf("verdict %s findings %+v, want fail with POLICY_CRITICAL_FAIL at /nfr/encryptionAtRest", res.Verdict, res.Findings)
	}
}

// TestSensitiveDataMustBeEncrypted: restricted data with encryptionAtRest
// false, or left out, on a stack that does not encrypt, stops the run.
func TestSensitiveDataMustBeEncrypted(t *testing.T) {
	tests := []struct {
		name    string
		nfr     runner.NFR
		mention string
	}{
		{"declared false", runner.NFR{EncryptionAtRest: ptr(false), DataClassification: "restricted"}, "encryptionAtRest false is not allowed: dataClassification restricted requires encryption at rest"},
		{"left out", runner.NFR{DataClassification: "restricted"}, "dataClassification restricted requires encryption at rest: encryptionAtRest true is not met"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := runStage(t, microservice(t, tc.nfr, map[string]any{"kms_key_arn": ""}))
			if res.Verdict != runner.Fail || len(res.Findings) != 1 || res.Findings[0].Field != "/nfr/encryptionAtRest" {
				t.Fatalf("verdict %s findings %+v, want fail at /nfr/encryptionAtRest", res.Verdict, res.Findings)
			}
			if !strings.Contains(res.Findings[0].Message, tc.mention) {
				t.Errorf("message %q does not say %q", res.Findings[0].Message, tc.mention)
			}
		})
	}
}

func TestStageRecordsItsResult(t *testing.T) {
	st := microservice(t, runner.NFR{Backups: ptr(true)}, nil)
	st.PCRs = []runner.PCR{{RuleID: "earlier"}}
	res := runStage(t, st)
	if res.Verdict != runner.Pass || res.Event != runner.EventNFREvaluated {
		t.Errorf("verdict %s event %s", res.Verdict, res.Event)
	}
	if len(st.PCRs) != 2 || st.PCRs[1].RuleID != "nfr.backups" || st.PCRs[1].ContractID != st.Contract.ID || !st.PCRs[1].EvaluatedAt.Equal(testTime) {
		t.Errorf("state records %+v", st.PCRs)
	}
	if st.Cost == nil || !st.Cost.Skipped || st.Cost.Reason != runner.InfracostNotConfigured {
		t.Errorf("cost %+v, want skipped with INFRACOST_NOT_CONFIGURED", st.Cost)
	}
}

func TestStageNeedsAResolvedContract(t *testing.T) {
	_, err := New(reg(t)).Run(t.Context(), &runner.State{})
	if runner.ReasonOf(err) != runner.InternalError {
		t.Errorf("error %v", err)
	}
}

// TestStateEncryption: nfr.stateEncryption is met by OpenTofu with the
// backend's encryption configured and by nothing else; unmet, it stops the
// run with the reason that says what to change.
func TestStateEncryption(t *testing.T) {
	encrypted := &runner.Backend{Type: "local", Encryption: &runner.StateEncryption{KeyProvider: runner.KeyProviderPBKDF2}}
	tests := []struct {
		name        string
		engine      string
		backend     *runner.Backend
		declared    bool
		want        []outcome
		wantVerdict runner.Verdict
		wantReason  runner.Reason
	}{
		{"terraform", "", nil, true,
			[]outcome{{StateEncryptionRuleID, runner.Critical, runner.PCRFail, NotSatisfiable, runner.StateEncryptionUnsupported}}, runner.Fail, runner.StateEncryptionUnsupported},
		{"opentofu without backend encryption", runner.EngineOpenTofu, &runner.Backend{Type: "local"}, true,
			[]outcome{{StateEncryptionRuleID, runner.Critical, runner.PCRFail, NotSatisfied, runner.StateEncryptionNotConfigured}}, runner.Fail, runner.StateEncryptionNotConfigured},
		{"opentofu with backend encryption", runner.EngineOpenTofu, encrypted, true,
			[]outcome{{StateEncryptionRuleID, runner.Critical, runner.PCRPass, Satisfied, ""}}, runner.Pass, ""},
		{"not declared", runner.EngineOpenTofu, encrypted, false, []outcome{}, runner.Pass, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &runner.Contract{APIVersion: "nova/v1", ID: "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90", Stack: "hello", Environment: runner.Dev,
				Engine: tt.engine, Backend: tt.backend, NFR: &runner.NFR{}}
			if tt.declared {
				c.NFR.StateEncryption = runner.StateEncryptionRequired
			}
			res := runStage(t, resolve(t, c))
			if diff := cmp.Diff(tt.want, outcomes(res.PCRs)); diff != "" {
				t.Errorf("records (-want +got)\n%s", diff)
			}
			if res.Verdict != tt.wantVerdict {
				t.Fatalf("verdict %s, want %s", res.Verdict, tt.wantVerdict)
			}
			if tt.wantReason != "" && (len(res.Findings) != 1 || res.Findings[0].Reason != tt.wantReason || res.Findings[0].Field != "/nfr/stateEncryption") {
				t.Errorf("findings %+v, want %s at /nfr/stateEncryption", res.Findings, tt.wantReason)
			}
		})
	}
}
