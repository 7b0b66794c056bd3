package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/audit"
	"github.com/nova-platform/nova/runner/evidence/chain"
)

// The audit commands are tested over an evidence repo built by real runs
// of examples/hello (real Terraform, real signatures, local mode), as the
// README's promotion walkthrough makes it, plus what goes wrong:
//
//   - dev applies; qa waits, qa-lead approves, it applies; prod approved by
//     qa-lead is refused (separation of duties), sre-oncall approves and it
//     applies; dr likewise;
//   - a changed contract in dev, which breaks a rule of the consumer's (a
//     medium failure: the score drops, the run goes on), whose apply
//     terraform fails, then one whose terraform is killed mid-apply
//     (indeterminate), which an operator resolves as not applied, then a
//     clean apply.
//
// It is built once per test binary: every test reads it, none changes it
// (a test that tampers works on a copy).

const helloID = "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90"

type auditRepo struct {
	home, dir string
	vars      map[string]string
}

var (
	auditOnce    sync.Once
	auditFix     *auditRepo
	auditRoot    string
	auditBuiltOK bool
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range []string{auditRoot, benchRoot} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// auditFixture returns the shared repo, building it on first use.
func auditFixture(t *testing.T) *auditRepo {
	t.Helper()
	auditOnce.Do(func() {
		var err error
		if auditRoot, err = os.MkdirTemp("", "nova-audit-"); err != nil {
			t.Fatal(err)
		}
		auditFix = buildAuditRepo(t, auditRoot)
		auditBuiltOK = true
	})
	if !auditBuiltOK {
		t.Fatal("the audit fixture could not be built (see the first test that failed)")
	}
	return auditFix
}

func buildAuditRepo(t *testing.T, root string) *auditRepo {
	if _, err := exec.LookPath("terraform"); err != nil {
		t.Fatal("terraform is not on PATH: run `make tools`")
	}
	ctx := t.Context()
	r := &auditRepo{home: filepath.Join(root, "home"), dir: filepath.Join(root, "hello")}
	r.vars = map[string]string{"HOME": r.home, "USER": "dev-author"}
	state := filepath.Join(root, "state")
	if err := os.CopyFS(r.dir, os.DirFS(filepath.Join("..", "examples", "hello"))); err != nil {
		t.Fatal(err)
	}
	// A rule of the consumer's own that the later change breaks: a medium
	// failure lowers the score in dev without stopping the run.
	writeFile(t, filepath.Join(r.dir, ".nova", "policy", "audience.rego"), `package contract

# METADATA
# custom:
#   severity: medium
deny_audience contains msg if {
	input.inputs.audience != "Nova"
	msg := sprintf("the greeting was reviewed for Nova, not for %v", [input.inputs.audience])
}
`)
	trusted := signedCheckout(t, r.dir)
	wrapper, mode := modeTerraform(t, root, "Error: the provider rejected the change")
	nova := func(want int, args ...string) {
		t.Helper()
		if args[0] != "evidence" {
			args = append(args, "--dir", r.dir)
		}
		if slices.Contains(pipelineCommands, args[0]) {
			args = append(args, "--state-dir", state, "--trusted-keys", trusted, "--terraform", wrapper)
		}
		var stdout, stderr bytes.Buffer
		code := exitCode(run(ctx, Env{Args: args, Getenv: func(k string) string { return r.vars[k] }, Environ: os.Environ(), Stdout: &stdout, Stderr: &stderr}))
		if code != want {
			t.Fatalf("nova %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, stdout.String(), stderr.String())
		}
	}
	nova(ExitPass, "run")
	nova(ExitAwaitingApproval, "run", "--env", "qa")
	nova(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
	nova(ExitPass, "apply", "--env", "qa")
	nova(ExitAwaitingApproval, "run", "--env", "prod")
	nova(ExitPass, "approve", "--env", "prod", "--as", "qa-lead")
	nova(ExitAwaitingApproval, "apply", "--env", "prod")
	nova(ExitPass, "approve", "--env", "prod", "--as", "sre-oncall")
	nova(ExitPass, "apply", "--env", "prod")
	nova(ExitAwaitingApproval, "run", "--env", "dr")
	nova(ExitPass, "approve", "--env", "dr", "--as", "sre-oncall")
	nova(ExitPass, "apply", "--env", "dr")

	contract := filepath.Join(r.dir, ".nova", "contract.yml")
	b, err := os.ReadFile(contract)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, contract, strings.Replace(string(b), "audience: Nova", "audience: Auditors", 1))
	writeFile(t, mode, "fail")
	nova(ExitError, "run")
	writeFile(t, mode, "kill")
	nova(ExitError, "run")
	r.vars["USER"] = "operator"
	nova(ExitPass, "evidence", "resolve", "--contract", helloID, "--env", "dev", "--outcome", "not-applied", "--note", "state shows the old greeting")
	writeFile(t, mode, "")
	nova(ExitPass, "run")
	return r
}

// modeTerraform writes a terraform into root that fails (printing
// failure) or dies in apply when its mode file says so, and is the real
// one otherwise; it returns the wrapper and the mode file.
func modeTerraform(t *testing.T, root, failure string) (wrapper, mode string) {
	t.Helper()
	mode = filepath.Join(root, "tf-mode")
	wrapper = filepath.Join(root, "terraform")
	writeFile(t, wrapper, fmt.Sprintf(`#!/bin/sh
if [ "$1" = apply ]; then
  case "$(cat %q 2>/dev/null)" in
    fail) echo %q >&2; exit 1 ;;
    kill) kill -KILL $$ ;;
  esac
fi
exec %q "$@"
`, mode, failure, mustLookPath(t)))
	if err := os.Chmod(wrapper, 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper, mode
}

// nova runs one command against the fixture's local evidence repo.
func (r *auditRepo) nova(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	vars := func(k string) string { return r.vars[k] }
	code := exitCode(run(t.Context(), Env{Args: args, Getenv: vars, Environ: os.Environ(), Stdout: &stdout, Stderr: &stderr}))
	return code, stdout.String(), stderr.String()
}

// copyHome gives a test the fixture's HOME (repo, keys, index) to change.
func (r *auditRepo) copyHome(t *testing.T) *auditRepo {
	t.Helper()
	c := &auditRepo{home: filepath.Join(t.TempDir(), "home"), dir: r.dir, vars: map[string]string{}}
	if err := os.CopyFS(c.home, os.DirFS(r.home)); err != nil {
		t.Fatal(err)
	}
	for k, v := range r.vars {
		c.vars[k] = v
	}
	c.vars["HOME"] = c.home
	return c
}

func (r *auditRepo) repoPath() string {
	return filepath.Join(r.home, ".local", "share", "nova", "evidence.git")
}

func queryJSONL(t *testing.T, r *auditRepo, args ...string) []audit.EventRow {
	t.Helper()
	code, stdout, stderr := r.nova(t, append([]string{"evidence", "query", "--output", "jsonl"}, args...)...)
	if code != ExitPass {
		t.Fatalf("query %v: exit %d\n%s", args, code, stderr)
	}
	var rows []audit.EventRow
	dec := json.NewDecoder(strings.NewReader(stdout))
	for dec.More() {
		var row audit.EventRow
		if err := dec.Decode(&row); err != nil {
			t.Fatalf("query %v: %v\n%s", args, err, stdout)
		}
		rows = append(rows, row)
	}
	return rows
}

func rowKeys(rows []audit.EventRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Environment+" "+r.Type)
	}
	return out
}

func TestQueryVerifiedEvidence(t *testing.T) {
	r := auditFixture(t)
	tests := []struct {
		name string
		args []string
		want []string // "env type" of each row, in chain order
	}{
		{"who approved qa", []string{"--env", "qa", "--type", runner.EventApprovalRecorded}, []string{"qa nova.approval.recorded"}},
		{"everything qa-lead decided, and where the gate refused it", []string{"--approver", "qa-lead", "--type", "nova.approval.*"},
			[]string{"qa nova.approval.recorded", "prod nova.approval.recorded", "prod nova.approval.refused"}},
		{"separation of duties", []string{"--reason", string(runner.SeparationOfDutiesViolation)}, []string{"prod nova.approval.requested", "prod nova.approval.refused"}},
		{"applies in prod", []string{"--env", "prod", "--type", "nova.apply.*"}, []string{"prod nova.apply.authorized", "prod nova.apply.completed"}},
		{"the unknown outcome and its resolution", []string{"--env", "dev", "--type", "nova.apply.indeterminate,nova.apply.resolved"}, []string{"dev nova.apply.indeterminate", "dev nova.apply.resolved"}},
		{"terraform's failure", []string{"--reason", string(runner.TerraformApplyFailed), "--type", runner.EventRunFailed}, []string{"dev nova.run.failed"}},
		{"nothing after tomorrow", []string{"--since", "2999-01-01"}, nil},
		{"nothing before the runs", []string{"--until", "2000-01-01"}, nil},
		{"another contract", []string{"--contract", "0c0ffee0-1111-4222-8333-444455556666"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := queryJSONL(t, r, tt.args...)
			if diff := strings.Join(rowKeys(rows), "\n"); diff != strings.Join(tt.want, "\n") {
				t.Fatalf("rows:\n%s\nwant:\n%s", diff, strings.Join(tt.want, "\n"))
			}
			for _, row := range rows {
				if row.ContractID != helloID || row.EventID == "" || len(row.EvidenceCommit) != 40 || !strings.HasPrefix(row.Path, "contracts/c2/"+helloID+"/") || len(row.Data) == 0 {
					t.Errorf("row lacks its trace: %+v", row)
				}
			}
		})
	}

	// The refused approval names qa-lead and why, and its data says who may
	// approve instead: the auditor's "was it ever the QA approver?".
	refused := queryJSONL(t, r, "--type", runner.EventApprovalRefused)
	var rec runner.RefusalRecord
	if len(refused) != 1 || json.Unmarshal(refused[0].Data, &rec) != nil || !slices.Equal(rec.Approvers, []string{"qa-lead"}) || !slices.Contains(rec.Eligible, "sre-oncall") {
		t.Errorf("refused approval: %+v", refused)
	}
	// Each row can be traced back: the commit it names added its file.
	checkTrace(t, r, refused[0])
}

// checkTrace opens the commit a row names and finds the row's event in it.
func checkTrace(t *testing.T, r *auditRepo, row audit.EventRow) {
	t.Helper()
	repo, err := git.PlainOpen(r.repoPath())
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(row.EvidenceCommit))
	if err != nil {
		t.Fatalf("commit %s of event %s: %v", row.EvidenceCommit, row.EventID, err)
	}
	f, err := c.File(row.Path)
	if err != nil {
		t.Fatalf("commit %s does not hold %s: %v", row.EvidenceCommit, row.Path, err)
	}
	body, _ := f.Contents()
	if !strings.Contains(body, row.EventID) || !strings.HasPrefix(c.Message, row.Type+" ") {
		t.Errorf("commit %s (%q) is not the one that added event %s", row.EvidenceCommit, c.Message, row.EventID)
	}
}

func TestQueryOutputs(t *testing.T) {
	r := auditFixture(t)
	code, stdout, stderr := r.nova(t, "evidence", "query", "--env", "dev", "--type", "nova.apply.*", "--output", "csv")
	if code != ExitPass {
		t.Fatalf("csv: exit %d\n%s", code, stderr)
	}
	records, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(records[0], ","); got != "time,contract_id,environment,type,seq,run_id,approvers,reasons,event_id,evidence_commit,path" {
		t.Errorf("csv header: %s", got)
	}
	var types []string
	for _, rec := range records[1:] {
		types = append(types, rec[3])
	}
	// dev: applied; failed (authorized only: terraform's failure is a
	// run.failed); indeterminate, resolved; applied.
	want := []string{"nova.apply.authorized", "nova.apply.completed", "nova.apply.authorized", "nova.apply.authorized", "nova.apply.indeterminate", "nova.apply.resolved", "nova.apply.authorized", "nova.apply.completed"}
	if !slices.Equal(types, want) {
		t.Errorf("csv types:\n%v\nwant\n%v", types, want)
	}

	code, stdout, stderr = r.nova(t, "evidence", "query", "--approver", "sre-oncall")
	if code != ExitPass || !strings.Contains(stdout, "TIME") || !strings.Contains(stdout, "nova.approval.recorded") || !strings.Contains(stdout, "event(s)") {
		t.Errorf("table: exit %d\n%s%s", code, stdout, stderr)
	}

	for _, bad := range [][]string{
		{"evidence", "query", "--output", "xml"}, {"evidence", "query", "--env", "staging"}, {"evidence", "query", "--reason", "NOT_A_CODE"},
		{"evidence", "query", "--since", "yesterday"}, {"evidence", "query", "--type", "[nova"},
		{"evidence", "export"}, {"evidence", "export", "--out", t.TempDir(), "--format", "xml"}, {"report", "--out", ""},
	} {
		code, _, stderr := r.nova(t, bad...)
		if code != ExitError || !strings.Contains(stderr, string(runner.ConfigInvalid)) {
			t.Errorf("nova %v: exit %d, %s", bad, code, stderr)
		}
	}
}

// TestQueryAndExportRefuseTamperedEvidence: once the repo is tampered with,
// query, export and report answer with verify's reason code and nothing
// else: never with the part that still verifies.
func TestQueryAndExportRefuseTamperedEvidence(t *testing.T) {
	r := auditFixture(t)
	tests := []struct {
		name   string
		tamper func(t *testing.T, c *auditRepo)
		want   runner.Reason
	}{
		{"an approval forged with another event key", func(t *testing.T, c *auditRepo) {
			forged := map[string]string{"HOME": c.home, "NOVA_SIGNING_KEY": string(newPEMKey(t)),
				"NOVA_EVIDENCE_PUBLIC_KEY": readKeyFile(t, filepath.Join(c.home, ".config", "nova", "signing.pub"))}
			env, _, _ := evidenceEnv(t, forged)
			s, err := readEvidenceConfig("", "", env.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			store, _, err := openEvidenceStore(t.Context(), s, env)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			if _, err := runner.NewEmitter(store, "urn:x", "r-forged", nil).Emit(t.Context(), runner.EventApprovalRecorded, helloID, "prod",
				runner.ApprovalRecord{Environment: "prod", Approver: "mallory", PlanDigest: "d"}); err != nil {
				t.Fatal(err)
			}
			if err := store.Drain(t.Context()); err != nil {
				t.Fatal(err)
			}
		}, runner.EvidenceSignatureInvalid},
		{"an event edited in an unsigned commit", func(t *testing.T, c *auditRepo) {
			work := filepath.Join(t.TempDir(), "w")
			git := func(args ...string) {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir = work
				cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=m", "GIT_AUTHOR_EMAIL=m@example.com", "GIT_COMMITTER_NAME=m", "GIT_COMMITTER_EMAIL=m@example.com")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			if out, err := exec.Command("git", "clone", "-q", c.repoPath(), work).CombinedOutput(); err != nil {
				t.Fatalf("git clone: %v\n%s", err, out)
			}
			files, _ := filepath.Glob(filepath.Join(work, "contracts", "*", helloID, "*xx", "*-nova.approval.recorded.json"))
			if len(files) == 0 {
				t.Fatal("no approval event in the evidence repo")
			}
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, files[0], strings.Replace(string(b), "qa-lead", "qa-lady", 1))
			git("commit", "-qam", "fix a typo")
			git("push", "-q", "origin", "HEAD:main")
		}, runner.EvidenceCommitUnsigned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := r.copyHome(t)
			// Indexed before the tampering: the index must not vouch for
			// what came after.
			if code, _, stderr := c.nova(t, "evidence", "query"); code != ExitPass {
				t.Fatalf("query before tampering: exit %d\n%s", code, stderr)
			}
			tt.tamper(t, c)
			code, stdout, _ := c.nova(t, "evidence", "verify", "--output", "json")
			var rep chain.Report
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != ExitFail || !slices.ContainsFunc(rep.Findings, func(f chain.Finding) bool { return f.Reason == tt.want }) {
				t.Fatalf("verify of the tampered repo: exit %d, %+v (%v)", code, rep.Findings, err)
			}
			// The commands name what verify names first.
			first := rep.Findings[0].Reason
			out := filepath.Join(t.TempDir(), "export")
			for _, args := range [][]string{
				{"evidence", "query"},
				{"evidence", "query", "--contract", helloID, "--output", "jsonl"},
				{"evidence", "query", "--reindex"},
				{"evidence", "export", "--out", out},
				{"report", "--out", filepath.Join(out, "report.html")},
			} {
				code, stdout, stderr := c.nova(t, args...)
				if code != ExitFail || !strings.Contains(stderr, ": "+string(first)+": ") || stdout != "" {
					t.Errorf("nova %v: exit %d, want %d naming %s\nstdout:\n%s\nstderr:\n%s", args, code, ExitFail, first, stdout, stderr)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("export or report wrote files from a repo that does not verify")
			}
		})
	}
}

func TestExportFactTables(t *testing.T) {
	r := auditFixture(t)
	dir := filepath.Join(t.TempDir(), "jsonl")
	if code, stdout, stderr := r.nova(t, "evidence", "export", "--out", dir); code != ExitPass {
		t.Fatalf("export: exit %d\n%s%s", code, stdout, stderr)
	}
	tables := map[string][]map[string]any{}
	for _, name := range []string{"runs", "stage_results", "pcrs", "confidence", "decisions", "approvals", "applies", "drift"} {
		tables[name] = readJSONL(t, filepath.Join(dir, name+".jsonl"))
		validateRows(t, name, tables[name])
		for i, row := range tables[name] {
			if id, commit := row["event_id"], row["evidence_commit"]; id == "" || id == nil || len(fmt.Sprint(commit)) != 40 {
				t.Errorf("%s row %d has no trace: event_id %v, evidence_commit %v", name, i+1, id, commit)
			}
		}
	}

	applies := project(tables["applies"], "environment", "outcome", "approver", "reason", "resolution")
	want := []string{
		"dev applied autonomous  ",
		"qa applied qa-lead  ",
		"prod applied sre-oncall  ",
		"dr applied sre-oncall  ",
		"dev failed autonomous TERRAFORM_APPLY_FAILED ",
		"dev indeterminate autonomous APPLY_INDETERMINATE not-applied",
		"dev applied autonomous  ",
	}
	if !slices.Equal(applies, want) {
		t.Errorf("applies:\n%s\nwant\n%s", strings.Join(applies, "\n"), strings.Join(want, "\n"))
	}
	approvals := project(tables["approvals"], "environment", "decision", "approver", "reason")
	if want := []string{"qa approved qa-lead ", "prod approved qa-lead ", "prod refused qa-lead SEPARATION_OF_DUTIES_VIOLATION", "prod approved sre-oncall ", "dr approved sre-oncall "}; !slices.Equal(approvals, want) {
		t.Errorf("approvals:\n%s\nwant\n%s", strings.Join(approvals, "\n"), strings.Join(want, "\n"))
	}
	for _, a := range tables["approvals"] {
		if a["decision"] == "approved" && (a["wait_seconds"] == nil || a["requested_at"] == nil) {
			t.Errorf("approval without its wait: %v", a)
		}
	}
	// Every decision of a run that reached an apply has its outcome; the
	// two interrupted ones were first indeterminate, then settled by the
	// resolution.
	outcomes := project(tables["decisions"], "environment", "outcome")
	if want := []string{"dev applied", "dev applied", "qa applied", "qa applied", "prod applied", "prod applied", "dr applied", "dr applied", "dev failed", "dev failed", "dev failed", "dev failed", "dev applied", "dev applied"}; !slices.Equal(outcomes, want) {
		t.Errorf("decision outcomes:\n%s\nwant\n%s", strings.Join(outcomes, "\n"), strings.Join(want, "\n"))
	}
	if n := len(queryJSONL(t, r, "--type", runner.EventDecisionOutcome, "--reason", string(runner.ApplyIndeterminate))); n != 4 {
		t.Errorf("%d outcome events carry APPLY_INDETERMINATE, want 4 (2 indeterminate, 2 resolved as failed)", n)
	}
	inputs := map[string]bool{}
	for _, c := range tables["confidence"] {
		inputs[fmt.Sprint(c["input"])] = true
	}
	if len(inputs) != 6 {
		t.Errorf("confidence inputs: %v", inputs)
	}
	runs := project(tables["runs"], "environment", "kind", "verdict", "reason")
	for _, want := range []string{"qa pipeline awaiting_approval APPROVAL_REQUIRED", "prod pipeline awaiting_approval SEPARATION_OF_DUTIES_VIOLATION", "dev pipeline error APPLY_INDETERMINATE", "qa approval pass ", "dev resolution pass "} {
		if !slices.Contains(runs, want) {
			t.Errorf("runs lack %q:\n%s", want, strings.Join(runs, "\n"))
		}
	}
	failing := 0
	for _, p := range tables["pcrs"] {
		if p["rule_id"] == "consumer.contract.deny_audience" && p["result"] == "fail" && p["severity"] == "medium" {
			failing++
		}
	}
	if failing != 3 {
		t.Errorf("the consumer rule failed %d times, want 3 (the three runs of the changed contract)", failing)
	}
	if len(tables["pcrs"]) == 0 || len(tables["stage_results"]) == 0 || len(tables["drift"]) != 0 {
		t.Errorf("pcrs %d, stage results %d, drift %d", len(tables["pcrs"]), len(tables["stage_results"]), len(tables["drift"]))
	}

	csvDir := filepath.Join(t.TempDir(), "csv")
	if code, _, stderr := r.nova(t, "evidence", "export", "--out", csvDir, "--format", "csv", "--contract", helloID); code != ExitPass {
		t.Fatalf("csv export: exit %d\n%s", code, stderr)
	}
	f, err := os.Open(filepath.Join(csvDir, "applies.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if cols := (&audit.Tables{}).List()[6].Columns(); !slices.Equal(records[0], cols) || len(records) != len(tables["applies"])+1 {
		t.Errorf("applies.csv: header %v, %d records; want %v and %d", records[0], len(records), cols, len(tables["applies"])+1)
	}
}

func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var row map[string]any
		if err := dec.Decode(&row); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rows = append(rows, row)
	}
	return rows
}

// validateRows checks each exported row against its published schema.
func validateRows(t *testing.T, name string, rows []map[string]any) {
	t.Helper()
	schema, err := os.ReadFile(filepath.Join("..", "docs", "export", name+".schema.json"))
	if err != nil {
		t.Fatalf("the %s table has no schema in docs/export: %v", name, err)
	}
	// The export schemas are documentation for other tools, free to use
	// any keyword: they are checked with a general validator, not Nova's.
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	url := audit.SchemaBase + name + ".schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range rows {
		raw, _ := json.Marshal(row)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err == nil {
			err = sch.Validate(doc)
		}
		if err != nil {
			t.Errorf("%s row %d does not match docs/export/%s.schema.json: %v", name, i+1, name, err)
		}
	}
}

func project(rows []map[string]any, cols ...string) []string {
	var out []string
	for _, r := range rows {
		var vals []string
		for _, c := range cols {
			v := r[c]
			if v == nil {
				v = ""
			}
			vals = append(vals, fmt.Sprint(v))
		}
		out = append(out, strings.Join(vals, " "))
	}
	return out
}
