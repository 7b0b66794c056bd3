package imagetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner/evidence/signing"
	"github.com/nova-platform/nova/runner/gitea/giteatest"
	"github.com/nova-platform/nova/templates"
)

// Exit codes of nova (action/exitcode.go).
const (
	exitPass     = 0
	exitAwaiting = 3
)

// environments are promoted through, in order, by every entry point.
var environments = []string{"dev", "qa"}

// trace is what an entry point did, in the terms the three are compared
// in: nova's exit code per round and environment, the qa plan digest, the
// event types of each pipeline run in the evidence repo, and the approvals
// it recorded.
type trace struct {
	exits     [][]int
	digest    string
	runs      [][]string
	approvals []string
}

// TestOneBehaviourThreeEntryPoints drives one contract change through dev
// and qa, with one approval in between, three ways: (a) the CLI, (b) the
// action's entrypoint as GitHub runs it (INPUT_*, GITHUB_OUTPUT,
// GITHUB_STEP_SUMMARY, a pull_request event, approvals from a GitHub fake),
// and (c) the Gitea inline workflow under act in host mode against a real
// Gitea, triggered by the event payloads Gitea delivers for the real pull
// request and the real approval comment. The three must give the same
// exit codes, the same plan digest, the same event types run by run, and
// the same approval.
//
// One difference is inherent: the CLI records an approval when it is
// given (`nova approve`), the forges when the next run reads it. So
// nova.approval.recorded is compared as the approvals, and left out of the
// runs, and the CLI's approve command is not a pipeline run.
func TestOneBehaviourThreeEntryPoints(t *testing.T) {
	if _, err := exec.LookPath("terraform"); err != nil {
		t.Fatalf("terraform is not on PATH: %v (make tools)", err)
	}
	act := findAct(t)
	f := newFlowForge(t)

	cli := f.viaCLI(t)
	action := f.viaAction(t)
	gitea := f.viaGiteaUnderAct(t, act)

	want := [][]int{{exitPass, exitAwaiting}, {exitPass, exitPass}}
	for name, tr := range map[string]trace{"cli": cli, "action": action, "gitea": gitea} {
		if diff := cmp.Diff(want, tr.exits); diff != "" {
			t.Errorf("%s: exit codes per round and environment (-want +got):\n%s", name, diff)
		}
	}
	if cli.digest == "" || action.digest != cli.digest || gitea.digest != cli.digest {
		t.Errorf("qa plan digests differ: cli %s, action %s, gitea %s", cli.digest, action.digest, gitea.digest)
	}
	wantApproval := []string{"qa-lead approve qa " + cli.digest}
	for name, tr := range map[string]trace{"cli": cli, "action": action, "gitea": gitea} {
		if diff := cmp.Diff(wantApproval, tr.approvals); diff != "" {
			t.Errorf("%s: approvals recorded (-want +got):\n%s", name, diff)
		}
	}
	if len(cli.runs) != 4 {
		t.Errorf("cli: %d pipeline runs in the evidence, want 4 (dev and qa, twice)", len(cli.runs))
	}
	if diff := cmp.Diff(cli.runs, action.runs); diff != "" {
		t.Errorf("event types per run, cli vs action (-cli +action):\n%s", diff)
	}
	if diff := cmp.Diff(cli.runs, gitea.runs); diff != "" {
		t.Errorf("event types per run, cli vs gitea (-cli +gitea):\n%s", diff)
	}
}

// flowForge is the consumer on a real Gitea: acme/app with the hello
// contract, its approvers and the Gitea workflow on main, a pull request
// from dev-author that changes an input, and acme/evidence for the
// workflow's events.
type flowForge struct {
	srv          *giteatest.Server
	dev, qa, bot giteatest.User
	nova         string
	baseSHA      string
	headSHA      string
	pull         int
	workflow     string
	hooks        chan delivery
	keys         eventKeys
}

// eventKeys sign events and evidence commits where the evidence repo is
// not the local one.
type eventKeys struct {
	signingPEM, commitArmored string
}

// delivery is one webhook Gitea sent.
type delivery struct {
	event string
	body  []byte
}

const workflowPath = ".gitea/workflows/nova-app.yml"

func newFlowForge(t *testing.T) *flowForge {
	root := mustRepoRoot(t)
	f := &flowForge{srv: giteatest.Start(t), nova: buildNova(t, root), hooks: make(chan delivery, 16)}
	f.keys = newEventKeys(t)
	s := f.srv
	s.CreateOrg(t, "acme")
	f.dev, f.qa, f.bot = s.CreateUser(t, "dev-author"), s.CreateUser(t, "qa-lead"), s.CreateUser(t, "nova-bot")
	s.CreateTeam(t, "acme", "writers", "write", f.dev.Name, f.bot.Name)
	s.CreateRepo(t, "acme", "app")
	s.API(t, s.AdminToken, http.MethodPost, "/admin/users/acme/repos", map[string]any{"name": "evidence", "auto_init": false, "private": false}, nil)
	// Nova decides only from an evidence branch nobody can force-push.
	// Before the first event the branch does not exist, and only the
	// rule that will cover it says so, which Gitea shows repository
	// admins alone: the bot administers the evidence repository.
	s.API(t, s.AdminToken, http.MethodPost, "/repos/acme/evidence/branch_protections", map[string]any{"rule_name": "main", "enable_push": true}, nil)
	s.API(t, s.AdminToken, http.MethodPut, "/repos/acme/evidence/collaborators/"+f.bot.Name, map[string]any{"permission": "admin"}, nil)

	// The workflow fetches nova from a release URL and checks its sha256,
	// as a consumer's does.
	bin, err := os.ReadFile(f.nova)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	release := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/nova-linux-amd64" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(bin)
	}))
	t.Cleanup(release.Close)
	wf, err := templates.RenderWorkflow(templates.GiteaWorkflow, templates.Workflow{
		Name: "app", Key: "app", Dir: ".", Contract: ".nova/contract.yml", Environments: environments,
		Nova:          templates.Binary{Version: "test", ReleaseURL: release.URL + "/nova-linux-amd64", SHA256: hex.EncodeToString(sum[:])},
		DefaultBranch: "main",
	})
	if err != nil {
		t.Fatal(err)
	}
	f.workflow = string(wf)

	hello := filepath.Join(root, "examples", "hello")
	files := map[string]string{
		".nova/approvers.yml": "groups:\n  qa:\n    members: [qa-lead]\n  sre:\n    members: [sre-oncall]\n",
		workflowPath:          f.workflow,
	}
	for _, name := range []string{".nova/contract.yml", "reports/unit.xml", "reports/e2e.xml", "reports/load.xml"} {
		files[name] = readFile(t, filepath.Join(hello, name))
	}
	f.baseSHA = s.CommitFiles(t, "acme", "app", "main", "main", files, s.Admin())

	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.hooks <- delivery{event: r.Header.Get("X-Gitea-Event"), body: body}
	}))
	t.Cleanup(hooks.Close)
	s.API(t, s.AdminToken, http.MethodPost, "/repos/acme/app/hooks", map[string]any{
		"type": "gitea", "active": true, "events": []string{"pull_request", "pull_request_comment", "issue_comment"},
		"config": map[string]string{"url": hooks.URL, "content_type": "json"},
	}, nil)

	contract := strings.Replace(files[".nova/contract.yml"], "audience: Nova", "audience: Nova and friends", 1)
	if contract == files[".nova/contract.yml"] {
		t.Fatal("examples/hello's contract has no `audience: Nova` to change")
	}
	f.headSHA = s.CommitFiles(t, "acme", "app", "greeting", "main", map[string]string{".nova/contract.yml": contract}, f.dev)
	f.pull = s.CreatePullRequest(t, "acme", "app", "greeting", "main", "Greet friends too", f.dev)
	return f
}

func newEventKeys(t *testing.T) eventKeys {
	dir := t.TempDir()
	if _, err := signing.LocalSigner(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := signing.LocalCommitSigner(dir, "Nova evidence", "nova-evidence@example.com"); err != nil {
		t.Fatal(err)
	}
	// The local key files are the PEM and armored keys a workflow's
	// secrets hold.
	return eventKeys{signingPEM: readFile(t, filepath.Join(dir, "signing.key")), commitArmored: readFile(t, filepath.Join(dir, "commit-key.asc"))}
}

// buildNova builds the nova binary the entry points run.
func buildNova(t *testing.T, root string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "nova")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", out, "./action")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// clone checks out the pull request's head from Gitea, as a developer or
// actions/checkout would: origin's HEAD names main, the trusted base.
func (f *flowForge) clone(t *testing.T) string {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"clone", "-q", f.srv.URL + "/acme/app.git", dir},
		{"-C", dir, "checkout", "-q", "--detach", f.headSHA},
	} {
		if out, err := exec.CommandContext(t.Context(), "git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// baseEnv is the environment every entry point starts from: nothing of
// this process's (which may itself run in a workflow) but PATH.
func baseEnv(t *testing.T) map[string]string {
	return map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": t.TempDir(), "NOVA_STATE_DIR": t.TempDir(),
		"GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1",
	}
}

// runIn runs name in dir with exactly env and returns its exit code and
// output.
func runIn(t *testing.T, dir string, env map[string]string, name string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String()
	}
	t.Fatalf("%s %v: %v\n%s", name, args, err, out.String())
	return -1, ""
}

// viaCLI: a developer on their machine, with local evidence and a signed
// local approval.
func (f *flowForge) viaCLI(t *testing.T) trace {
	dir := f.clone(t)
	env := baseEnv(t)
	env["USER"] = "dev-author"
	var tr trace
	round := func() {
		var codes []int
		for _, e := range environments {
			code, out := runIn(t, dir, env, f.nova, "run", "--env", e)
			codes = append(codes, code)
			if e == "qa" {
				tr.digest = firstMatch(planLine, out)
			}
		}
		tr.exits = append(tr.exits, codes)
	}
	round()
	if code, out := runIn(t, dir, env, f.nova, "approve", "--env", "qa", "--as", "qa-lead"); code != exitPass {
		t.Fatalf("nova approve: exit %d\n%s", code, out)
	}
	round()
	tr.runs, tr.approvals = readEvidence(t, filepath.Join(env["HOME"], ".local", "share", "nova", "evidence.git"), nil)
	return tr
}

var planLine = regexp.MustCompile(`· plan ([0-9a-f]{64})`)

func firstMatch(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// viaAction: the entrypoint of the container action as GitHub's runner
// starts it, in a pull_request workflow, with GitHub played by a fake
// that a reviewer's /nova comment is posted to between the rounds.
func (f *flowForge) viaAction(t *testing.T) trace {
	dir := f.clone(t)
	gh := newFakeGitHub(t, "acme", "app", filepath.Join(dir, ".git"), pullFixture{Number: f.pull, Author: f.dev.Name, HeadSHA: f.headSHA, BaseSHA: f.baseSHA, HeadRef: "greeting", BaseRef: "main"})
	evidence := t.TempDir()
	if out, err := exec.CommandContext(t.Context(), "git", "init", "-q", "--bare", evidence).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	event := filepath.Join(t.TempDir(), "event.json")
	writeTestFile(t, event, fmt.Sprintf(`{"action": "opened", "number": %d,
  "pull_request": {"number": %[1]d, "user": {"login": %q}, "head": {"sha": %q, "ref": "greeting"}, "base": {"sha": %q, "ref": "main"}},
  "repository": {"name": "app", "full_name": "acme/app", "owner": {"login": "acme"}, "default_branch": "main"}}`, f.pull, f.dev.Name, f.headSHA, f.baseSHA))
	env := baseEnv(t)
	for k, v := range map[string]string{
		"GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_WORKSPACE": dir, "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": event,
		"GITHUB_API_URL": gh.srv.URL, "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/app",
		"GITHUB_SHA": f.headSHA, "GITHUB_ACTOR": f.dev.Name, "GITHUB_REF": fmt.Sprintf("refs/pull/%d/merge", f.pull),
	} {
		env[k] = v
	}
	// The runner passes every input, its default when the workflow does
	// not set it.
	inputs := map[string]string{}
	for name, in := range readActionManifest(t).Inputs {
		inputs[name] = in.Default
	}
	for k, v := range map[string]string{
		"command": "run", "evidence-repo": evidence, "github-token": gh.token,
		"signing-key": f.keys.signingPEM, "commit-key": f.keys.commitArmored,
	} {
		inputs[k] = v
	}
	var tr trace
	run := 100
	round := func() {
		var codes []int
		for _, e := range environments {
			run++
			step := t.TempDir()
			stepEnv := maps(env, map[string]string{
				"GITHUB_RUN_ID": strconv.Itoa(run), "GITHUB_OUTPUT": filepath.Join(step, "output"), "GITHUB_STEP_SUMMARY": filepath.Join(step, "summary"),
			})
			for k, v := range inputs {
				stepEnv["INPUT_"+strings.ToUpper(k)] = v
			}
			stepEnv["INPUT_ENVIRONMENT"] = e
			code, out := runIn(t, dir, stepEnv, f.nova)
			codes = append(codes, code)
			outputs := parseFileCommand(t, readFile(t, filepath.Join(step, "output")))
			if outputs["exit-code"] != strconv.Itoa(code) {
				t.Errorf("action %s: exit %d but output exit-code %q\n%s", e, code, outputs["exit-code"], out)
			}
			if summary := readFile(t, filepath.Join(step, "summary")); !strings.Contains(summary, "### nova run: "+outputs["verdict"]) {
				t.Errorf("action %s: job summary lacks the verdict %s:\n%s", e, outputs["verdict"], summary)
			}
			if e == "qa" {
				tr.digest = outputs["plan-digest"]
			}
		}
		tr.exits = append(tr.exits, codes)
	}
	round()
	if len(tr.digest) < 12 || gh.botComment("/nova approve qa "+tr.digest) == "" {
		t.Fatalf("no comment on the pull request asking for qa's approval of plan %q", tr.digest)
	}
	if s := gh.lastStatus(f.headSHA, "/qa"); s != "pending" {
		t.Errorf("qa commit status %q, want pending", s)
	}
	gh.addComment("qa-lead", "/nova approve qa "+tr.digest)
	round()
	if s := gh.lastStatus(f.headSHA, "/qa"); s != "success" {
		t.Errorf("qa commit status %q after the approval, want success", s)
	}
	if d := gh.deploymentStates("qa"); d != f.headSHA[:7]+":in_progress>success" {
		t.Errorf("qa deployments %q, want one of the head, in progress then success", d)
	}
	tr.runs, tr.approvals = readEvidence(t, evidence, nil)
	return tr
}

func maps(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// viaGiteaUnderAct: the Gitea workflow run by act in host mode, for the
// pull_request and issue_comment events Gitea delivered; Gitea is checked
// afterwards for what nova left on the pull request.
func (f *flowForge) viaGiteaUnderAct(t *testing.T, act string) trace {
	opened := f.await(t, "pull_request", func(p map[string]any) bool { return p["action"] == "opened" })
	work := t.TempDir()
	writeTestFile(t, filepath.Join(work, workflowPath), f.workflow)
	state := t.TempDir()
	var tr trace
	round := func(event string, payload []byte, ref, sha string, runID int) {
		log := f.act(t, act, work, state, event, payload, ref, sha, runID)
		if log.jobResult != "success" {
			t.Fatalf("act %s: job result %q\n%s", event, log.jobResult, log.raw)
		}
		exits := map[string]int{}
		for _, m := range exitLine.FindAllStringSubmatch(log.raw, -1) {
			exits[m[1]], _ = strconv.Atoi(m[2])
		}
		var codes []int
		for _, e := range environments {
			if c, ok := exits[e]; ok {
				codes = append(codes, c)
			}
		}
		tr.exits = append(tr.exits, codes)
	}
	// Gitea runs the default branch's copy for pull_request_target, at
	// the base's head (actrunner's TestGiteaEventFacts).
	round("pull_request_target", opened, "refs/heads/main", f.baseSHA, 1)

	// What a reviewer sees on Gitea: nova's comment for qa, naming the
	// command that approves it, and a pending status.
	qaComment := f.botComment(t, "· qa")
	tr.digest = firstMatch(regexp.MustCompile("\\*\\*Plan\\*\\* `([0-9a-f]{64})`"), qaComment)
	if tr.digest == "" || !strings.Contains(qaComment, "/nova approve qa "+tr.digest) {
		t.Fatalf("nova's qa comment on Gitea names no plan to approve:\n%s", qaComment)
	}
	if s := f.status(t, "qa"); s != "pending" {
		t.Errorf("qa commit status on Gitea %q, want pending", s)
	}
	if s := f.status(t, "dev"); s != "success" {
		t.Errorf("dev commit status on Gitea %q, want success", s)
	}

	f.srv.API(t, f.qa.Token, http.MethodPost, fmt.Sprintf("/repos/acme/app/issues/%d/comments", f.pull), map[string]string{"body": "/nova approve qa " + tr.digest}, nil)
	// Gitea sends a pull request's comments as issue_comment, the event
	// its Actions run too.
	comment := f.await(t, "issue_comment", func(p map[string]any) bool {
		c, _ := p["comment"].(map[string]any)
		body, _ := c["body"].(string)
		return strings.HasPrefix(body, "/nova approve")
	})
	// Gitea runs comment workflows at the default branch's head.
	round("issue_comment", comment, "refs/heads/main", f.baseSHA, 2)
	if s := f.status(t, "qa"); s != "success" {
		t.Errorf("qa commit status on Gitea %q after the approval, want success", s)
	}
	if c := f.botComment(t, "· qa"); !strings.Contains(c, ": pass") {
		t.Errorf("nova's qa comment after the approval:\n%s", c)
	}
	tr.runs, tr.approvals = readEvidence(t, f.srv.URL+"/acme/evidence.git", &githttp.BasicAuth{Username: f.bot.Name, Password: f.bot.Token})
	return tr
}

var exitLine = regexp.MustCompile(`(?m)^nova (dev|qa|prod|dr): exit (\d+)$`)

// await waits for Gitea's webhook of event whose payload matches.
func (f *flowForge) await(t *testing.T, event string, match func(map[string]any) bool) []byte {
	t.Helper()
	for {
		select {
		case d := <-f.hooks:
			var p map[string]any
			if d.event == event && json.Unmarshal(d.body, &p) == nil && match(p) {
				return d.body
			}
		case <-t.Context().Done():
			t.Fatalf("no %s webhook from Gitea", event)
		}
	}
}

// act runs the workflow for one event as Gitea's runner would: Gitea's
// variables, the repository's variables and secrets, the job on this
// machine (-self-hosted).
func (f *flowForge) act(t *testing.T, act, work, state, event string, payload []byte, ref, sha string, runID int) actLog {
	t.Helper()
	eventFile := filepath.Join(t.TempDir(), "event.json")
	writeTestFile(t, eventFile, string(payload))
	home := t.TempDir()
	args := []string{event, "--json", "-W", workflowPath, "-e", eventFile,
		"-P", "ubuntu-latest=-self-hosted", "--no-cache-server",
		"--env", "GITEA_ACTIONS=true",
		"--env", "GITHUB_SERVER_URL=" + f.srv.URL, "--env", "GITHUB_API_URL=" + f.srv.URL + "/api/v1",
		"--env", "GITHUB_REPOSITORY=acme/app", "--env", "GITHUB_REF=" + ref, "--env", "SHA_REF=" + sha,
		"--env", "GITHUB_RUN_ID=" + strconv.Itoa(runID), "--env", "GITHUB_ACTOR=" + f.dev.Name,
		"--var", "NOVA_EVIDENCE_REPO=" + f.srv.URL + "/acme/evidence.git",
		"-s", "NOVA_EVIDENCE_TOKEN=" + f.bot.Token, "-s", "NOVA_GITEA_TOKEN=" + f.bot.Token,
		"-s", "NOVA_SIGNING_KEY=" + f.keys.signingPEM, "-s", "NOVA_COMMIT_KEY=" + f.keys.commitArmored,
	}
	env := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_CACHE_HOME": filepath.Join(home, ".cache"),
		"NOVA_STATE_DIR": state, "GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1",
	}
	_, out := runIn(t, work, env, act, args...)
	return parseActLog(t, out)
}

// botComment is nova's comment on the pull request whose body contains s.
func (f *flowForge) botComment(t *testing.T, s string) string {
	t.Helper()
	var comments []struct {
		Body string `json:"body"`
		User struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	f.srv.API(t, f.bot.Token, http.MethodGet, fmt.Sprintf("/repos/acme/app/issues/%d/comments", f.pull), nil, &comments)
	var all []string
	for _, c := range comments {
		if c.User.Login == f.bot.Name && strings.Contains(c.Body, s) {
			return c.Body
		}
		all = append(all, c.User.Login+": "+c.Body)
	}
	t.Fatalf("no comment of %s containing %q; the comments:\n%s", f.bot.Name, s, strings.Join(all, "\n---\n"))
	return ""
}

// status is the state of the head's newest commit status for env.
func (f *flowForge) status(t *testing.T, env string) string {
	t.Helper()
	var statuses []struct {
		Status  string `json:"status"`
		Context string `json:"context"`
	}
	f.srv.API(t, f.bot.Token, http.MethodGet, "/repos/acme/app/commits/"+f.headSHA+"/statuses?sort=newest", nil, &statuses)
	for _, s := range statuses {
		if strings.HasSuffix(s.Context, "/"+env) {
			return s.Status
		}
	}
	return ""
}

// decisions are the events that record a claim, and what it decided.
var decisions = map[string]string{"nova.approval.recorded": "approve", "nova.approval.rejected": "reject"}

// readEvidence reads the evidence repo at url: the event types of each
// pipeline run in chain order, without the events that record a claim,
// which are returned as "approver decision env digest" lines. A run of approval
// events only (the CLI's approve command) is not a pipeline run.
func readEvidence(t *testing.T, url string, auth *githttp.BasicAuth) (runs [][]string, approvals []string) {
	t.Helper()
	var order []string
	byRun := map[string][]string{}
	for _, e := range loadEvidence(t, url, auth) {
		// Only a pull request's run checks who holds dev: the CLI has
		// none to check.
		if e.Type == "nova.lock.checked" {
			continue
		}
		if decision, ok := decisions[e.Type]; ok {
			var a struct {
				Approver, Environment, PlanDigest string
			}
			_ = json.Unmarshal(e.Data, &a)
			approvals = append(approvals, strings.Join([]string{a.Approver, decision, a.Environment, a.PlanDigest}, " "))
			continue
		}
		if _, ok := byRun[e.RunID]; !ok {
			order = append(order, e.RunID)
		}
		byRun[e.RunID] = append(byRun[e.RunID], e.Type)
	}
	for _, id := range order {
		types := byRun[id]
		if !slices.ContainsFunc(types, func(s string) bool { return !strings.HasPrefix(s, "nova.approval.") }) {
			continue
		}
		runs = append(runs, types)
	}
	return runs, approvals
}

// evidenceEvent is an event as the evidence repo holds it.
type evidenceEvent struct {
	Seq   int64           `json:"seq"`
	Type  string          `json:"type"`
	RunID string          `json:"runid"`
	Data  json.RawMessage `json:"data"`
}

// loadEvidence clones the evidence repo at url and reads its events in
// chain order.
func loadEvidence(t *testing.T, url string, auth *githttp.BasicAuth) []evidenceEvent {
	t.Helper()
	dir := t.TempDir()
	opts := &git.CloneOptions{URL: url, ReferenceName: plumbing.NewBranchReferenceName("main"), SingleBranch: true}
	if auth != nil {
		opts.Auth = auth
	}
	if _, err := git.PlainCloneContext(context.WithoutCancel(t.Context()), dir, false, opts); err != nil {
		t.Fatalf("cloning the evidence repo %s: %v", url, err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "contracts", "*", "*", "*xx", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no events in the evidence repo %s (%v)", url, err)
	}
	var events []evidenceEvent
	for _, p := range paths {
		var e evidenceEvent
		if err := json.Unmarshal([]byte(readFile(t, p)), &e); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		events = append(events, e)
	}
	sort.Slice(events, func(i, j int) bool { return events[i].Seq < events[j].Seq })
	return events
}
