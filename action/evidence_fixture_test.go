package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/evidencetest"
)

// The fixture evidence repo (runner/evidence/testdata/fixture-v1) was
// written by real runs of this binary's code at one commit and is never
// rewritten by later code: it proves that what signs and hashes events and
// commits still gives the bytes it gave then. A change of format gets a
// new fixture beside it, not a rewrite of this one; the flag is for that
// first writing only.
var writeFixtureV1 = flag.String("write-evidence-fixture-v1", "", "write the fixture evidence repo into this directory (once; see evidence_fixture_test.go)")

// fixtureV1Want is what verify reports of the fixture: every event, commit
// and contract of it, so a verify that silently skips something fails.
type fixtureV1Want struct {
	Events, Commits, Contracts int
	Head                       string
}

// TestEvidenceFixtureV1Verifies runs `nova evidence verify` on the
// fixture, in place and over file:// (a fetch into a clone), with the
// fixture's public keys and witness: everything verifies, and the counts
// are those recorded when it was written.
func TestEvidenceFixtureV1Verifies(t *testing.T) {
	if *writeFixtureV1 != "" {
		writeEvidenceFixtureV1(t, *writeFixtureV1)
	}
	fix := evidencetest.OpenFixtureV1(t)
	var want fixtureV1Want
	readJSONFile(t, filepath.Join(fix.Dir, "want.json"), &want)
	keys := []string{"--key", fix.EventKey, "--commit-key", fix.CommitKey, "--witness", fix.Witness}
	for _, target := range []string{fix.Repo, "file://" + fix.Repo} {
		name := "in-place"
		if strings.HasPrefix(target, "file://") {
			name = "file-transport"
		}
		t.Run(name, func(t *testing.T) {
			env, stdout, stderr := evidenceEnv(t, map[string]string{"HOME": t.TempDir()})
			if code := evidenceCommand(t.Context(), slices.Concat([]string{"verify", target, "--output", "json"}, keys), env); code != ExitPass {
				t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
			}
			var rep chain.Report
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			got := fixtureV1Want{Events: rep.Events, Commits: rep.Commits, Contracts: rep.Contracts, Head: rep.Head}
			if got != want || !rep.OK() || rep.Witnessed == 0 {
				t.Errorf("verify reports %+v (ok %t, %d witnessed heads), want %+v", got, rep.OK(), rep.Witnessed, want)
			}
		})
	}
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// Text from the change and from people, as it reaches events: non-ASCII,
// what HTML would read as markup, JSON's escapes, a line separator.
const (
	fixtureGreeting = `Grüß Gott <b>&amp;</b> "quoted" back\slash — 日本語 😀`
	fixtureAudience = "Ops & <i>Co</i>\u2028next line"
	fixtureReject   = "not today: </script><script>alert('x')</script> & \"why\"\nsecond line\ttab — ünïcödé"
	fixtureNote     = "state shows «Grüß Gott» <unchanged> & the lock\\path is C:\\tmp\x7f"
)

// writeEvidenceFixtureV1 writes the fixture with real runs in local mode
// (real Terraform, real keys) as the README's walkthrough makes a repo:
//
//   - hello (examples/hello, its greeting and audience as above): dev
//     applies; qa waits, qa-lead approves, it applies; prod waits and
//     sre-oncall rejects it; a changed dev run whose apply terraform fails,
//     one whose terraform is killed (indeterminate), resolved as not
//     applied, then a clean apply;
//   - a second contract whose consumer rule fails with the audience in its
//     message, applied in dev and waiting in qa;
//   - a third contract's events recorded through the store with data not
//     yet canonical (unsorted and duplicate keys, escapes, invalid UTF-8,
//     control bytes, numbers as written).
func writeEvidenceFixtureV1(t *testing.T, out string) {
	ctx := t.Context()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	vars := map[string]string{"HOME": home, "USER": "dev-author"}
	wrapper, mode := modeTerraform(t, root, "Error: the provider rejected the change <b>&</b>")
	consumer := func(name, id, policy string) (dir, trusted string) {
		dir = filepath.Join(root, name)
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "examples", "hello"))); err != nil {
			t.Fatal(err)
		}
		contract := filepath.Join(dir, ".nova", "contract.yml")
		b, err := os.ReadFile(contract)
		if err != nil {
			t.Fatal(err)
		}
		greeting, _ := json.Marshal(fixtureGreeting)
		audience, _ := json.Marshal(fixtureAudience)
		s := strings.Replace(string(b), "greeting: Hello", "greeting: "+string(greeting), 1)
		s = strings.Replace(s, "audience: Nova", "audience: "+string(audience), 1)
		s = strings.Replace(s, "id: "+helloID, "id: "+id, 1)
		writeFile(t, contract, s)
		if policy != "" {
			writeFile(t, filepath.Join(dir, ".nova", "policy", "audience.rego"), policy)
		}
		return dir, signedCheckout(t, dir)
	}
	nova := func(dir, trusted string, want int, args ...string) {
		t.Helper()
		if args[0] != "evidence" {
			args = append(args, "--dir", dir)
		}
		if slices.Contains(pipelineCommands, args[0]) {
			args = append(args, "--state-dir", filepath.Join(root, "state", filepath.Base(dir)), "--trusted-keys", trusted, "--terraform", wrapper)
		}
		var stdout, stderr bytes.Buffer
		code := exitCode(run(ctx, Env{Args: args, Getenv: func(k string) string { return vars[k] }, Environ: os.Environ(), Stdout: &stdout, Stderr: &stderr}))
		if code != want {
			t.Fatalf("nova %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, stdout.String(), stderr.String())
		}
	}

	hello, trusted := consumer("hello", helloID, "")
	nova(hello, trusted, ExitPass, "run")
	nova(hello, trusted, ExitAwaitingApproval, "run", "--env", "qa")
	nova(hello, trusted, ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
	nova(hello, trusted, ExitPass, "apply", "--env", "qa")
	nova(hello, trusted, ExitAwaitingApproval, "run", "--env", "prod")
	nova(hello, trusted, ExitPass, "reject", "--env", "prod", "--as", "sre-oncall", "--reason", fixtureReject)
	contract := filepath.Join(hello, ".nova", "contract.yml")
	b, err := os.ReadFile(contract)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, contract, strings.Replace(string(b), "repeat: 2", "repeat: 3", 1))
	writeFile(t, mode, "fail")
	nova(hello, trusted, ExitError, "run")
	writeFile(t, mode, "kill")
	nova(hello, trusted, ExitError, "run")
	vars["USER"] = "opérateur"
	nova(hello, trusted, ExitPass, "evidence", "resolve", "--contract", helloID, "--env", "dev", "--outcome", "not-applied", "--note", fixtureNote)
	vars["USER"] = "dev-author"
	writeFile(t, mode, "")
	nova(hello, trusted, ExitPass, "run")

	second, trusted2 := consumer("second", "9f1e2d3c-4b5a-4697-8877-665544332211", `package contract

# METADATA
# custom:
#   severity: medium
deny_audience contains msg if {
	input.inputs.audience != "Nova"
	msg := sprintf("the greeting was reviewed for <Nova>, not for %v", [input.inputs.audience])
}
`)
	nova(second, trusted2, ExitPass, "run")
	nova(second, trusted2, ExitAwaitingApproval, "run", "--env", "qa")

	writeRawEvents(t, vars)

	paths, err := evidence.DefaultLocalPaths(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	writeFixtureFiles(t, out, paths)
}

// writeRawEvents records a third contract's events through the store as
// a caller that hands it JSON not yet in canonical form would.
func writeRawEvents(t *testing.T, vars map[string]string) {
	ctx := t.Context()
	env, _, _ := evidenceEnv(t, vars)
	s, err := readEvidenceConfig("", "", env.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	store, _, err := openEvidenceStore(ctx, s, env)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	em := runner.NewEmitter(store, "urn:nova:fixture <v1> & \"raw\"", "run-raw-ü", nil)
	contract := "raw-data"
	for _, data := range []any{
		json.RawMessage(`{ "z" : "\u003cb\u003e \u0026 \u00e9\u00E9 \ud83d\ude00 \/ \u2028\u2029 \u0000\u001f" , "a" : [1.50, 1E5, -0, 1e+05, 0.000], "dup": 1, "dup": {"y": 2, "x": "\t\n\r\b\f"} }`),
		json.RawMessage(`{"\u0041":"upper escape","@":"at","B":"b","\ud800":"lone surrogate","é":"é","e\u0301":"combining"}`),
		map[string]any{"invalid": "ok\xffok\xc3", "control": "\x01\x02\x7f", "html": "<a href=\"x\">&</a>", "seps": "a\u2028b\u2029c", "keys": map[string]int{"\xff": 1, "\n": 2, "<": 3}},
		runner.ApprovalRecord{Environment: "dev", PlanDigest: strings.Repeat("ab", 32), Approver: "zoë <admin>", Group: "qa & co", Source: runner.SourceLocal, SourceRef: "claim \"1\"\\2"},
	} {
		if _, err := em.Emit(ctx, "nova.test.raw", contract, runner.Dev, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

// writeFixtureFiles copies the local repo (its objects as Nova packed
// them), the public keys (events, commits, each approver's claims) and the
// witness into out, and records what verify reports of them. The private
// keys stay behind.
func writeFixtureFiles(t *testing.T, out string, paths evidence.LocalPaths) {
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(out, "repo.git")
	if err := os.CopyFS(repo, os.DirFS(paths.Repo)); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{
		paths.SigningPublicKeyFile(): "cosign.pub",
		paths.CommitPublicKeyFile():  "commit-key.pub.asc",
		evidence.WitnessFile(evidence.StateDirFor(paths.StateBase, paths.Repo)): "witness",
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(out, dst), string(b))
	}
	approvers, err := filepath.Glob(filepath.Join(paths.ConfigDir, "approvers", "*", "signing.pub"))
	if err != nil || len(approvers) == 0 {
		t.Fatalf("no approver keys: %v", err)
	}
	for _, p := range approvers {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(out, "approvers", filepath.Base(filepath.Dir(p))+".pub"), string(b))
	}
	os.Remove(filepath.Join(repo, "nova-pack.lock"))
	// git would otherwise apply text conversions to the repo's files.
	writeFile(t, filepath.Join(out, ".gitattributes"), "* -text -diff\n")
	env, stdout, stderr := evidenceEnv(t, map[string]string{"HOME": t.TempDir()})
	args := []string{"verify", repo, "--output", "json", "--key", filepath.Join(out, "cosign.pub"), "--commit-key", filepath.Join(out, "commit-key.pub.asc"), "--witness", filepath.Join(out, "witness")}
	if code := evidenceCommand(t.Context(), args, env); code != ExitPass {
		t.Fatalf("the fixture does not verify: exit %d\n%s%s", code, stdout, stderr)
	}
	var rep chain.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	want, err := json.MarshalIndent(fixtureV1Want{Events: rep.Events, Commits: rep.Commits, Contracts: rep.Contracts, Head: rep.Head}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(out, "want.json"), string(want)+"\n")
}
