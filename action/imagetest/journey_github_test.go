package imagetest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner/evidence/signing"
)

// TestGitHubJourney drives examples/hello from pull request to dr through
// the workflows `nova init --forge github` writes, on the GitHub
// emulation (ghactions_test.go: the action's container as GitHub's runner
// starts it; GitHub played by the fake), by the events GitHub sends for
// what people do. Each way of approving is taken once:
//
//  1. dev-author opens the pull request (pull_request_target): dev
//     applies; qa's apply waits for qa's required reviewer;
//  2. qa-lead approves the qa deployment (GitHub's environment review):
//     qa applies; prod, which has no required reviewers, waits for an
//     approval;
//  3. a comment that is no /nova command starts no job;
//  4. `/nova approve prod <digest>` (issue_comment) by qa-lead is refused
//     (separation of duties: qa-lead approved qa), by dev-author ignored
//     (the author), prod waiting all along; sre-oncall approves the pull
//     request (a review, relayed by the secretless workflow to
//     workflow_run): prod applies;
//  5. dr reaches its confidence threshold with the provenance GitHub
//     verified (the head is signed) and waits; sre-oncall approves it by
//     comment: dr applies;
//  6. dev-author pushes a commit that does not touch the contract
//     (synchronize): every environment answers with its receipt, no
//     apply job runs and nobody is asked.
//
// It asserts what GitHub shows (each environment's commit status on the
// head, one comment per environment), what the evidence records (the
// approvals, who was ignored and why), that `nova evidence verify` passes
// over the evidence URL, and reports the events each job wrote and the
// jobs each run ran.
func TestGitHubJourney(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is not on PATH: %v", err)
	}
	j := newGitHubJourney(t)
	gh := j.gh

	// 1. The pull request is opened.
	run := j.one(j.pullRequestTarget("opened"))
	j.ranJobs(run, []string{"pull-request", "plan-dev", "apply-dev", "plan-qa"})
	if env := run.waiting(); env != "qa" {
		t.Fatalf("after opening, the run waits for %q, want qa's reviewers", env)
	}
	j.statuses(map[string]string{"dev": "success", "qa": "pending"})
	qaDigest := j.digestToApprove("qa")

	// 2. qa's required reviewer approves the deployment.
	run.reviewDeployment("qa", "qa-lead", "approved")
	j.ranJobs(run, []string{"pull-request", "plan-dev", "apply-dev", "plan-qa", "apply-qa", "plan-prod", "apply-prod"})
	j.verdict(run, "prod", "awaiting_approval")
	j.statuses(map[string]string{"dev": "success", "qa": "success", "prod": "pending"})
	prodDigest := j.digestToApprove("prod")

	// 3. A comment that is no command starts no job.
	if ran := j.one(j.comment("qa-lead", "Looks good to me")).ran(); len(ran) != 0 {
		t.Errorf("a plain comment ran jobs: %v", ran)
	}

	// 4. prod: refused, ignored, then approved by review. A refused or
	// ignored approval leaves prod waiting, not failed: nothing is wrong
	// with the change.
	run = j.one(j.comment("qa-lead", "/nova approve prod "+prodDigest))
	j.ranJobs(run, []string{"pull-request", "plan-dev", "plan-qa", "plan-prod", "apply-prod"})
	j.verdict(run, "prod", "awaiting_approval")
	j.says(run, "apply-prod", "SEPARATION_OF_DUTIES_VIOLATION")
	j.statuses(map[string]string{"prod": "pending"})
	run = j.one(j.comment("dev-author", "/nova approve prod "+prodDigest))
	j.ranJobs(run, []string{"pull-request", "plan-dev", "plan-qa", "plan-prod", "apply-prod"})
	j.verdict(run, "prod", "awaiting_approval")
	j.statuses(map[string]string{"prod": "pending"})
	if _, err := gh.review("dev-author", "APPROVED"); err == nil {
		t.Error("GitHub let the author approve their own pull request")
	}
	run = j.one(j.review("sre-oncall", "APPROVED"))
	j.ranJobs(run, []string{"pull-request", "plan-dev", "plan-qa", "plan-prod", "apply-prod", "plan-dr", "apply-dr"})
	j.verdict(run, "prod", "pass")

	// 5. dr: the head is signed, and GitHub shows it verified, which is
	// the provenance dr's threshold asks for; sre-oncall approves by
	// comment.
	j.verdict(run, "dr", "awaiting_approval")
	j.statuses(map[string]string{"dev": "success", "qa": "success", "prod": "success", "dr": "pending"})
	drDigest := j.digestToApprove("dr")
	run = j.one(j.comment("sre-oncall", "/nova approve dr "+drDigest))
	j.ranJobs(run, []string{"pull-request", "plan-dev", "plan-qa", "plan-prod", "plan-dr", "apply-dr"})
	j.verdict(run, "dr", "pass")
	all := map[string]string{"dev": "success", "qa": "success", "prod": "success", "dr": "success"}
	j.statuses(all)

	// 6. A commit that does not touch the contract: receipts.
	j.push("docs: say hello", map[string]string{"README.md": "hello\n"})
	run = j.one(j.pullRequestTarget("synchronize"))
	j.ranJobs(run, []string{"pull-request", "plan-dev", "plan-qa", "plan-prod", "plan-dr"})
	for _, env := range environmentsAll {
		if run.jobs["plan-"+env].outputs["receipt"] == "" {
			t.Errorf("plan-%s of the re-run answered without a receipt", env)
		}
		if n := run.jobs["plan-"+env].events; n > 15 {
			t.Errorf("plan-%s of the re-run wrote %d events, want at most 15", env, n)
		}
	}
	if env := run.waiting(); env != "" {
		t.Errorf("the re-run waits for %s's reviewers", env)
	}
	j.statuses(all)

	// What the pull request shows: one comment per environment.
	for _, env := range environmentsAll {
		if n := gh.botComments(fmt.Sprintf("env=%s -->", env)); n != 1 {
			t.Errorf("%d comments of nova for %s, want 1", n, env)
		}
	}
	// What the evidence says: the approvals recorded (qa-lead's of prod
	// too: imported, then refused by the gate), the author's ignored, and
	// it verifies.
	auth := &githttp.BasicAuth{Username: "x-access-token", Password: j.evidenceToken}
	_, approvals := readEvidence(t, j.evidenceURL, auth)
	want := []string{"qa-lead approve qa " + qaDigest, "qa-lead approve prod " + prodDigest, "sre-oncall approve prod " + prodDigest, "sre-oncall approve dr " + drDigest}
	if diff := cmp.Diff(want, approvals); diff != "" {
		t.Errorf("approvals recorded (-want +got):\n%s", diff)
	}
	if ignored := ignoredClaims(t, j.evidenceURL, auth); !slices.Contains(ignored, "prod dev-author APPROVER_NOT_ELIGIBLE") {
		t.Errorf("the author's approval of prod is not among the ignored claims: %q", ignored)
	}
	// Every keyed run asked GitHub whether the evidence branch refuses
	// force pushes (the evidence repository is remote, so no witness on
	// the runner would do).
	if n := gh.requests["GET /api/v3/repos/acme/evidence/rules/branches/main"]; n == 0 {
		t.Error("nova never checked the evidence branch's protection")
	}
	j.verifyEvidence()
	j.report()
}

var environmentsAll = []string{"dev", "qa", "prod", "dr"}

// githubJourney is acme/hello on the GitHub emulation.
type githubJourney struct {
	t           *testing.T
	gh          *fakeGitHub
	actions     *ghActions
	nova        string
	work        string // the developers' clone, pushing to git
	keysDir     string
	evidenceURL string
	// evidenceToken pushes to the evidence repository.
	evidenceToken string
	devKey        *openpgp.Entity
}

func newGitHubJourney(t *testing.T) *githubJourney {
	root := mustRepoRoot(t)
	image := novaImage(t)
	j := &githubJourney{t: t, nova: buildNova(t, root), keysDir: t.TempDir(), evidenceToken: "ghp_EvidenceToken0123456789abcdefABCD"}

	// The repositories GitHub keeps: acme/hello, and acme/evidence, whose
	// branch refuses force pushes and deletions.
	hosted := t.TempDir()
	bare := filepath.Join(hosted, "hello.git")
	evidence := filepath.Join(hosted, "evidence.git")
	for _, args := range [][]string{
		{"init", "-q", "--bare", "-b", "main", bare},
		{"--git-dir", bare, "config", "uploadpack.allowAnySHA1InWant", "true"},
		{"init", "-q", "--bare", "-b", "main", evidence},
		{"--git-dir", evidence, "config", "receive.denyNonFastForwards", "true"},
		{"--git-dir", evidence, "config", "receive.denyDeletes", "true"},
	} {
		j.git(args...)
	}

	// main: examples/hello and the workflows nova init writes for it.
	scratch := t.TempDir()
	if out, err := exec.CommandContext(t.Context(), j.nova, "init", "--forge", "github", "--dir", scratch, "--name", "hello").CombinedOutput(); err != nil {
		t.Fatalf("nova init: %v\n%s", err, out)
	}
	j.work = t.TempDir()
	if err := copyDir(filepath.Join(root, "examples", "hello"), j.work); err != nil {
		t.Fatal(err)
	}
	if err := copyDir(filepath.Join(scratch, ".github"), filepath.Join(j.work, ".github")); err != nil {
		t.Fatal(err)
	}
	repo, err := git.PlainInit(j.work, false)
	if err != nil {
		t.Fatal(err)
	}
	base := j.commit(repo, "platform-admin", "hello, with nova", nil)
	j.git("-C", j.work, "push", "-q", bare, "HEAD:refs/heads/main")

	// The pull request: dev-author's signed commit that greets friends
	// too. (Signed, so prod's confidence threshold is met; whether GitHub
	// verified it is not read by nova yet.)
	if j.devKey, err = openpgp.NewEntity("Dev Author", "", "dev-author@example.com", nil); err != nil {
		t.Fatal(err)
	}
	contract := readFile(t, filepath.Join(j.work, ".nova", "contract.yml"))
	edited := strings.Replace(contract, "audience: Nova", "audience: Nova and friends", 1)
	if edited == contract {
		t.Fatal("examples/hello's contract has no `audience: Nova` to change")
	}
	head := j.commit(repo, "dev-author", "greet friends too", map[string]string{".nova/contract.yml": edited})
	j.git("-C", j.work, "push", "-q", bare, "HEAD:refs/heads/greeting", "HEAD:refs/pull/1/head")

	j.gh = newJourneyGitHub(t, "acme", "hello", bare, evidence, j.evidenceToken,
		pullFixture{Number: 1, Author: "dev-author", HeadSHA: head, BaseSHA: base, HeadRef: "greeting", BaseRef: "main"})
	j.evidenceURL = j.gh.serverURL() + "/acme/evidence.git"

	// Nova's keys, as the Environments' secrets hold them.
	if _, err := signing.LocalSigner(j.keysDir); err != nil {
		t.Fatal(err)
	}
	if _, err := signing.LocalCommitSigner(j.keysDir, "Nova evidence", "nova-evidence@example.com"); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{
		"NOVA_EVIDENCE_TOKEN": j.evidenceToken,
		"NOVA_SIGNING_KEY":    readFile(t, filepath.Join(j.keysDir, "signing.key")),
		"NOVA_COMMIT_KEY":     readFile(t, filepath.Join(j.keysDir, "commit-key.asc")),
	}
	main := []string{"main"}
	j.actions = &ghActions{t: t, gh: j.gh, image: image, git: bare, evidence: evidence,
		envs: map[string]ghEnvironment{
			"nova": {Branches: main, Secrets: secrets},
			// qa approves by GitHub's deployment review; prod and dr,
			// without required reviewers, by comment and by review.
			"qa":   {Branches: main, Reviewers: []string{"qa-lead"}, Secrets: secrets},
			"prod": {Branches: main, Secrets: secrets},
			"dr":   {Branches: main, Secrets: secrets},
		},
		vars: map[string]string{"NOVA_EVIDENCE_REPO": j.evidenceURL},
	}
	return j
}

func (j *githubJourney) git(args ...string) string {
	j.t.Helper()
	cmd := exec.CommandContext(j.t.Context(), "git", args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		j.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes files into the developers' clone and commits everything
// as login (dev-author's commits signed with their key).
func (j *githubJourney) commit(repo *git.Repository, login, msg string, files map[string]string) string {
	t := j.t
	for name, content := range files {
		writeTestFile(t, filepath.Join(j.work, name), content)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddGlob("."); err != nil {
		t.Fatal(err)
	}
	opts := &git.CommitOptions{Author: &object.Signature{Name: login, Email: login + "@example.com", When: time.Now()}}
	if login == "dev-author" {
		opts.SignKey = j.devKey
	}
	hash, err := wt.Commit(msg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return hash.String()
}

// push is dev-author pushing a commit to the pull request's branch.
func (j *githubJourney) push(msg string, files map[string]string) {
	repo, err := git.PlainOpen(j.work)
	if err != nil {
		j.t.Fatal(err)
	}
	sha := j.commit(repo, "dev-author", msg, files)
	j.git("-C", j.work, "push", "-q", j.actions.git, "HEAD:refs/heads/greeting", "+HEAD:refs/pull/1/head")
	j.gh.push(sha)
}

func (j *githubJourney) head() string {
	j.gh.mu.Lock()
	defer j.gh.mu.Unlock()
	return j.gh.pr.HeadSHA
}

func (j *githubJourney) mainHead() string {
	return strings.TrimSpace(j.actions.gitOut("rev-parse", "refs/heads/main"))
}

func (j *githubJourney) repository() map[string]any {
	return j.gh.repoJSON()
}

func (j *githubJourney) pullRequest() map[string]any {
	pr := j.gh.pr
	return map[string]any{"number": pr.Number, "state": "open", "user": j.gh.user(pr.Author),
		"head": map[string]any{"sha": pr.HeadSHA, "ref": pr.HeadRef, "repo": j.repository()},
		"base": map[string]any{"sha": pr.BaseSHA, "ref": pr.BaseRef, "repo": j.repository()}}
}

// pullRequestTarget is GitHub's pull_request_target for the pull request:
// the base branch's workflows, at its head.
func (j *githubJourney) pullRequestTarget(action string) []*ghRun {
	payload := map[string]any{"action": action, "number": j.gh.pr.Number, "pull_request": j.pullRequest(),
		"repository": j.repository(), "sender": j.gh.user("dev-author")}
	return j.actions.dispatch("pull_request_target", action, payload, "main", "refs/heads/main", j.mainHead(), "dev-author")
}

// comment is login commenting on the pull request: issue_comment, the
// default branch's workflows.
func (j *githubJourney) comment(login, body string) []*ghRun {
	c := j.gh.addComment(login, body)
	payload := map[string]any{"action": "created", "comment": c, "repository": j.repository(), "sender": j.gh.user(login),
		"issue": map[string]any{"number": j.gh.pr.Number, "user": j.gh.user(j.gh.pr.Author), "state": "open",
			"pull_request": map[string]any{"url": j.gh.apiURL() + "/repos/acme/hello/pulls/1"}}}
	return j.actions.dispatch("issue_comment", "created", payload, "main", "refs/heads/main", j.mainHead(), login)
}

// review is login reviewing the pull request's head: pull_request_review
// runs the pull request's own copy of the relay, whose completion is a
// workflow_run of the default branch's workflows.
func (j *githubJourney) review(login, state string) []*ghRun {
	t := j.t
	r, err := j.gh.review(login, state)
	if err != nil {
		t.Fatal(err)
	}
	head := j.head()
	payload := map[string]any{"action": "submitted", "review": r, "pull_request": j.pullRequest(), "repository": j.repository(), "sender": j.gh.user(login)}
	relays := j.actions.dispatch("pull_request_review", "submitted", payload, head, "refs/pull/1/merge", head, login)
	relay := j.one(relays)
	if relay.conclusion() != "success" || len(relay.ran()) != 1 {
		t.Fatalf("the review relay: %s, jobs %v", relay.conclusion(), relay.ran())
	}
	pr := j.gh.pr
	completed := map[string]any{"action": "completed", "repository": j.repository(), "sender": j.gh.user(login),
		"workflow_run": map[string]any{"id": relay.id, "name": relay.wf.Name, "event": "pull_request_review", "status": "completed",
			"conclusion": "success", "head_sha": head, "head_branch": pr.HeadRef,
			"pull_requests": []any{map[string]any{"number": pr.Number,
				"head": map[string]any{"sha": head, "ref": pr.HeadRef}, "base": map[string]any{"sha": pr.BaseSHA, "ref": pr.BaseRef}}}}}
	return j.actions.dispatch("workflow_run", "completed", completed, "main", "refs/heads/main", j.mainHead(), login)
}

// verdict checks the verdict of env's apply job in run.
func (j *githubJourney) verdict(run *ghRun, env, want string) {
	j.t.Helper()
	if got := run.jobs["apply-"+env].outputs["verdict"]; got != want {
		j.t.Errorf("run %d: apply-%s verdict %q, want %q", run.id, env, got, want)
	}
}

// says checks that job's log gives each reason.
func (j *githubJourney) says(run *ghRun, job string, reasons ...string) {
	j.t.Helper()
	log := strings.Join(run.jobs[job].log, "\n")
	for _, r := range reasons {
		if !strings.Contains(log, r) {
			j.t.Errorf("run %d: %s does not say %s:\n%s", run.id, job, r, log)
		}
	}
}

// refusedFor checks that job failed, nova saying why with each reason.
func (j *githubJourney) refusedFor(run *ghRun, job string, reasons ...string) {
	t := j.t
	t.Helper()
	jr := run.jobs[job]
	log := strings.Join(jr.log, "\n")
	if jr.result != "failure" {
		t.Errorf("run %d: %s %s, want failure (%v)", run.id, job, jr.result, reasons)
	}
	for _, r := range reasons {
		if !strings.Contains(log, r) {
			t.Errorf("run %d: %s does not say %s:\n%s", run.id, job, r, log)
		}
	}
}

// ignoredClaims are the claims the evidence says were not imported, as
// "env approver reason".
func ignoredClaims(t *testing.T, url string, auth *githttp.BasicAuth) []string {
	var out []string
	for _, e := range loadEvidence(t, url, auth) {
		if e.Type != "nova.approval.checked" {
			continue
		}
		var c struct {
			Result struct {
				Environment string
				Ignored     []struct{ Approver, Reason string }
			}
		}
		if err := json.Unmarshal(e.Data, &c); err != nil {
			t.Fatal(err)
		}
		for _, i := range c.Result.Ignored {
			out = append(out, c.Result.Environment+" "+i.Approver+" "+i.Reason)
		}
	}
	return out
}

// one is the only run an event started.
func (j *githubJourney) one(runs []*ghRun) *ghRun {
	j.t.Helper()
	// GitHub starts every workflow an event names: the break-glass
	// workflow answers comments too, but only on issues, so on the pull
	// request it must run nothing.
	runs = slices.DeleteFunc(slices.Clone(runs), func(r *ghRun) bool {
		if !strings.HasSuffix(r.file, "-breakglass.yml") {
			return false
		}
		if ran := r.ran(); len(ran) != 0 {
			j.t.Errorf("run %d (%s) of %s ran %v on the pull request", r.id, r.event, r.file, ran)
		}
		return true
	})
	if len(runs) != 1 {
		j.t.Fatalf("the event started %d runs, want 1", len(runs))
	}
	return runs[0]
}

// ranJobs checks which jobs of run ran, and that only the given ones of
// them failed.
func (j *githubJourney) ranJobs(run *ghRun, want []string, failed ...string) {
	t := j.t
	t.Helper()
	if diff := cmp.Diff(slices.Sorted(slices.Values(want)), run.ran()); diff != "" {
		t.Errorf("run %d (%s): jobs that ran (-want +got):\n%s", run.id, run.event, diff)
	}
	for _, name := range run.ran() {
		if jr := run.jobs[name]; (jr.result == "failure") != slices.Contains(failed, name) {
			t.Errorf("run %d job %s: %s, want %s:\n%s", run.id, name, jr.result, map[bool]string{true: "failure", false: "success"}[slices.Contains(failed, name)], strings.Join(jr.log, "\n"))
		}
	}
}

// statuses checks the newest commit status of each environment on the
// pull request's head.
func (j *githubJourney) statuses(want map[string]string) {
	j.t.Helper()
	head := j.head()
	for env, state := range want {
		if got := j.gh.lastStatus(head, "/"+env); got != state {
			j.t.Errorf("commit status of %s on the head: %q, want %q", env, got, state)
		}
	}
}

var fullDigest = regexp.MustCompile("/nova approve (?:qa|prod|dr) ([0-9a-f]{64})")

// digestToApprove is the plan digest nova's comment for env asks to
// approve.
func (j *githubJourney) digestToApprove(env string) string {
	j.t.Helper()
	c := j.gh.botComment(fmt.Sprintf("env=%s -->", env))
	m := fullDigest.FindStringSubmatch(c)
	if m == nil {
		j.t.Fatalf("nova's %s comment names no plan to approve:\n%s", env, c)
	}
	return m[1]
}

// verifyEvidence runs `nova evidence verify` over the evidence URL with
// the workflow's public keys.
func (j *githubJourney) verifyEvidence() {
	t := j.t
	env := baseEnv(t)
	env["NOVA_EVIDENCE_TOKEN"] = j.evidenceToken
	code, out := runIn(t, t.TempDir(), env, j.nova, "evidence", "verify", "--evidence-repo", j.evidenceURL,
		"--key", signing.LocalSigningPublicKey(j.keysDir), "--commit-key", signing.LocalCommitPublicKey(j.keysDir))
	if code != exitPass {
		t.Errorf("nova evidence verify: exit %d\n%s", code, out)
	}
}

// report logs the jobs each run ran and the events each job wrote.
func (j *githubJourney) report() {
	t := j.t
	jobs, events, nova := 0, 0, 0
	for _, run := range j.actions.runs {
		jobs += len(run.ran())
		for _, name := range run.ran() {
			events += run.jobs[name].events
			if name != "pull-request" && name != "relay" {
				nova++
			}
		}
	}
	t.Logf("journey: %d events, %d runs, %d jobs (%d holding Nova's keys), %.1f events per keyed job",
		events, len(j.actions.runs), jobs, nova, float64(events)/float64(max(nova, 1)))
}

// copyDir copies src into dst, leaving out what `make demo` leaves.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() && (d.Name() == "runs" || d.Name() == ".terraform") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
}
