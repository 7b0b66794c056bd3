package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/nova-platform/nova/runner"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var evaluated = time.Date(2025, 11, 29, 18, 0, 0, 0, time.UTC)

// records is one of each kind of record a run produces.
func records() []runner.PCR {
	base := runner.PCR{ContractID: "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", EvaluatedAt: evaluated}
	rec := func(engine, rule string, sev runner.Severity, res runner.PCRResult, msg, ref string) runner.PCR {
		p := base
		p.Engine, p.RuleID, p.Severity, p.Result, p.Message, p.ResourceRef = engine, rule, sev, res, msg, ref
		p.Evidence = json.RawMessage(`{"checked":1}`)
		return p
	}
	return []runner.PCR{
		rec("rego", "nova.tags.required", runner.Medium, runner.PCRPass, "Required nova:* tags: no violation in 3 checked", "contract"),
		rec("rego", "nova.secrets.plaintext", runner.Critical, runner.PCRFail, "input db_password holds a secret in plaintext (name)", "contract:/inputs/db_password"),
		rec("rego", "nova.naming.convention", runner.Low, runner.PCRFail, "instance table input table_name = \"Orders\": use lowercase letters, digits and hyphens", "module.table"),
		rec("checkov", "checkov.CKV_AWS_18", runner.Medium, runner.PCRFail, "Ensure the S3 bucket has access logging enabled", "module.assets.aws_s3_bucket.this"),
		rec("checkov", "CHECKOV_NOT_CONFIGURED", runner.Info, runner.PCRSkipped, "checkov is not installed (\"checkov\" not found); its checks did not run", ""),
		rec("kyverno", "POLICY_ENGINE_ERROR", runner.High, runner.PCRError, "kyverno engine: exit status 2:\npanic: 100% broken", ""),
		rec("nfr", "nfr.encryptionAtRest", runner.High, runner.PCRFail, "encryptionAtRest true is not met: assets (s3-bucket): kms_key_arn is empty", "contract:/nfr/encryptionAtRest"),
	}
}

func contractLocator(t *testing.T) Locator {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "contract.yml"))
	if err != nil {
		t.Fatal(err)
	}
	return ContractLocator(".nova/contract.yml", data)
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; create it with: go test ./stages/policy/report -run %s -update", err, t.Name())
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got); if the change is intended, regenerate with: go test ./stages/policy/report -run %s -update\n%s", path, t.Name(), diff)
	}
}

func TestText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, records()); err != nil {
		t.Fatal(err)
	}
	golden(t, "want.txt", b.Bytes())
}

func TestJSONRoundTrips(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, records()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Counts struct{ Pass, Fail, Skipped, Error int }
		PCRs   []runner.PCR
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for i := range got.PCRs {
		var compact bytes.Buffer
		if err := json.Compact(&compact, got.PCRs[i].Evidence); err != nil {
			t.Fatal(err)
		}
		got.PCRs[i].Evidence = compact.Bytes()
	}
	if diff := cmp.Diff(records(), got.PCRs); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if got.Counts.Pass != 1 || got.Counts.Fail != 4 || got.Counts.Skipped != 1 || got.Counts.Error != 1 {
		t.Errorf("counts %+v", got.Counts)
	}
}

// TestSARIFValidates checks the output against the SARIF 2.1.0 JSON schema
// as published on schemastore (testdata/sarif-2.1.0-rtm.5.json, byte for
// byte the copy npm's @microsoft/jest-sarif 1.0.0-beta.0 ships; sha256
// 2d99159a…de4f8).
func TestSARIFValidates(t *testing.T) {
	schemaFile, err := os.Open(filepath.Join("testdata", "sarif-2.1.0-rtm.5.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer schemaFile.Close()
	doc, err := jsonschema.UnmarshalJSON(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("sarif.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("sarif.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		pcrs []runner.PCR
		opts Options
	}{
		{"located", records(), Options{Locate: contractLocator(t), ContractFile: ".nova/contract.yml", Version: "1.2.3"}},
		{"no locator", records(), Options{}},
		{"no records", nil, Options{Version: "dev"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteSARIF(&b, tc.pcrs, tc.opts); err != nil {
				t.Fatal(err)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(inst); err != nil {
				t.Errorf("SARIF output does not validate: %v\n%s", err, b.String())
			}
		})
	}
	// A deliberately broken log must fail, or the test proves nothing.
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"nova"}},"results":[{"ruleId":"x","level":"critical","message":{"text":"m"}}]}]}`))
	if sch.Validate(bad) == nil {
		t.Error("the schema accepted a result with level critical")
	}
}

func TestSARIFContent(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSARIF(&b, records(), Options{Locate: contractLocator(t), ContractFile: ".nova/contract.yml", Version: "1.2.3"}); err != nil {
		t.Fatal(err)
	}
	golden(t, "want.sarif", b.Bytes())
}

func TestJUnitParses(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJUnit(&b, records()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Error   *struct{} `xml:"error"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("JUnit output does not parse: %v\n%s", err, b.String())
	}
	if got.Tests != 7 || got.Failures != 4 || got.Errors != 1 || got.Skipped != 1 {
		t.Errorf("totals %d tests %d failures %d errors %d skipped", got.Tests, got.Failures, got.Errors, got.Skipped)
	}
	var suites []string
	for _, s := range got.Suites {
		suites = append(suites, s.Name)
	}
	if diff := cmp.Diff([]string{"rego", "checkov", "kyverno", "nfr"}, suites); diff != "" {
		t.Errorf("suites (-want +got)\n%s", diff)
	}
	if c := got.Suites[0].Cases[1]; c.Name != "nova.secrets.plaintext contract:/inputs/db_password" || c.Failure == nil {
		t.Errorf("case %+v", c)
	}
}

func TestAnnotations(t *testing.T) {
	var b bytes.Buffer
	if err := WriteAnnotations(&b, records(), contractLocator(t)); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"::error file=.nova/contract.yml,line=7,title=nova.secrets.plaintext (critical%2C rego)::contract:/inputs/db_password: input db_password holds a secret in plaintext (name)",
		"::error file=.nova/contract.yml,line=13,title=nfr.encryptionAtRest (high%2C nfr)::contract:/nfr/encryptionAtRest: encryptionAtRest true is not met: assets (s3-bucket): kms_key_arn is empty",
		"::warning title=checkov.CKV_AWS_18 (medium%2C checkov)::module.assets.aws_s3_bucket.this: Ensure the S3 bucket has access logging enabled",
		"::warning title=nova.naming.convention (low%2C rego)::module.table: instance table input table_name = \"Orders\": use lowercase letters, digits and hyphens",
		"::warning title=POLICY_ENGINE_ERROR (high%2C kyverno)::kyverno engine: exit status 2:%0Apanic: 100%25 broken",
		"",
	}, "\n")
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestContractLocator(t *testing.T) {
	loc := contractLocator(t)
	tests := []struct {
		ref  string
		line int
		ok   bool
	}{
		{"contract:/stack", 3, true},
		{"contract:/inputs/db_password", 7, true},
		{"contract:/inputs/subnet_ids/1", 10, true},
		{"contract:/inputs/a~1b~0c", 11, true},
		{"contract:/nfr/encryptionAtRest", 13, true},
		// Not in the file: the closest enclosing field.
		{"contract:/nfr/availability", 12, true},
		{"module.table", 0, false},
		{"contract", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.ref, func(t *testing.T) {
			file, line, ok := loc(tc.ref)
			if ok != tc.ok || line != tc.line || (ok && file != ".nova/contract.yml") {
				t.Errorf("got %s:%d %v, want line %d %v", file, line, ok, tc.line, tc.ok)
			}
		})
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range Formats {
		if got, err := ParseFormat(string(f)); err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %q, %v", f, got, err)
		}
	}
	if _, err := ParseFormat("html"); err == nil {
		t.Error("html accepted")
	}
}
