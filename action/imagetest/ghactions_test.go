package imagetest

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// ghActions is GitHub Actions for one repository, emulated after GitHub's
// documentation ("Events that trigger workflows", "Using environments for
// deployment", "Evaluate expressions", "Store information in variables")
// and its runner (runner_test.go):
//
//   - which workflows an event starts, and whose copy of them: the pull
//     request's for pull_request_review, the base branch's for
//     pull_request_target, the default branch's for issue_comment and
//     workflow_run, with GITHUB_REF and GITHUB_SHA as GitHub sets them;
//     a workflow's completion starts the workflow_run workflows naming it;
//   - jobs in the order of their needs, each on a fresh machine, with
//     their `if:` (and its implicit success()), outputs and results;
//   - Environments: a job whose run's ref the deployment branch rule does
//     not admit fails before it starts; one with required reviewers waits
//     until one approves this run's deployment; only then does it get the
//     environment's secrets;
//   - steps: Nova's action as the runner starts a container action, `run:`
//     scripts as the runner runs them, and GitHub's own actions by what
//     they do (checkout, upload-artifact, download-artifact, upload-sarif).
//
// Jobs run one at a time, so concurrency groups never wait. Events made
// with the job's token (nova's comments) start nothing, as on GitHub: only
// the test sends events.
type ghActions struct {
	t     *testing.T
	gh    *fakeGitHub
	image string
	// git is the repository's bare repository; evidence the evidence's.
	git, evidence string
	envs          map[string]ghEnvironment
	vars          map[string]string
	nextRun       int64
	runs          []*ghRun
}

// ghEnvironment is an Environment's protection rules and secrets.
type ghEnvironment struct {
	// Branches are the deployment branches; Reviewers the required
	// reviewers (none: no review).
	Branches, Reviewers []string
	Secrets             map[string]string
}

type ghWorkflow struct {
	Name string               `yaml:"name"`
	On   map[string]ghTrigger `yaml:"on"`
	Jobs map[string]*ghJob    `yaml:"jobs"`
}

type ghTrigger struct {
	Types     []string `yaml:"types"`
	Workflows []string `yaml:"workflows"`
}

type ghJob struct {
	Name        string            `yaml:"name"`
	Needs       ghList            `yaml:"needs"`
	If          string            `yaml:"if"`
	Environment string            `yaml:"environment"`
	Outputs     map[string]string `yaml:"outputs"`
	Steps       []ghStep          `yaml:"steps"`
}

type ghStep struct {
	ID              string            `yaml:"id"`
	Name            string            `yaml:"name"`
	If              string            `yaml:"if"`
	Uses            string            `yaml:"uses"`
	Run             string            `yaml:"run"`
	With            map[string]string `yaml:"with"`
	Env             map[string]string `yaml:"env"`
	ContinueOnError bool              `yaml:"continue-on-error"`
}

// ghList is a name or a list of names.
type ghList []string

func (l *ghList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = []string{n.Value}
		return nil
	}
	var s []string
	err := n.Decode(&s)
	*l = s
	return err
}

// ghRun is one workflow run.
type ghRun struct {
	a             *ghActions
	id, attempt   int64
	file          string
	wf            *ghWorkflow
	event, action string
	payload       []byte
	ref, sha      string
	actor         string
	jobs          map[string]*ghJobRun
	artifacts     map[string]string
}

// ghJobRun is a job of a run: its result (success, failure, skipped, or
// waiting for a deployment review), outputs, and what it did.
type ghJobRun struct {
	result   string
	approved bool
	outputs  map[string]any
	// events is how many events the job added to the evidence branch.
	events int
	log    []string
}

// sortedJobs are the workflow's job names, sorted, for a stable order.
func (w *ghWorkflow) sortedJobs() []string {
	var names []string
	for n := range w.Jobs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// dispatch sends an event: every workflow whose copy at copyRef takes it
// runs, as far as it goes before a job waits for a review. ref and sha
// are GITHUB_REF and GITHUB_SHA.
func (a *ghActions) dispatch(event, action string, payload map[string]any, copyRef, ref, sha, actor string) []*ghRun {
	t := a.t
	t.Helper()
	raw, err := json.MarshalIndent(payload, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var started []*ghRun
	for _, file := range a.workflowFiles(copyRef) {
		wf := a.workflow(copyRef, file)
		trig, ok := wf.On[event]
		if !ok || (len(trig.Types) > 0 && !slices.Contains(trig.Types, action)) {
			continue
		}
		if event == "workflow_run" {
			name, _ := property(property(payload, "workflow_run"), "name").(string)
			if !slices.Contains(trig.Workflows, name) {
				continue
			}
		}
		a.nextRun++
		run := &ghRun{a: a, id: 17014420000 + a.nextRun, attempt: 1, file: file, wf: wf, event: event, action: action, payload: raw,
			ref: ref, sha: sha, actor: actor, jobs: map[string]*ghJobRun{}, artifacts: map[string]string{}}
		for _, name := range wf.sortedJobs() {
			run.jobs[name] = &ghJobRun{}
		}
		a.runs = append(a.runs, run)
		started = append(started, run)
		run.advance()
	}
	return started
}

// workflowFiles lists .github/workflows at ref of the repository.
func (a *ghActions) workflowFiles(ref string) []string {
	out := a.gitOut("ls-tree", "--name-only", ref+":.github/workflows")
	var files []string
	for _, f := range strings.Fields(out) {
		if strings.HasSuffix(f, ".yml") || strings.HasSuffix(f, ".yaml") {
			files = append(files, f)
		}
	}
	return files
}

func (a *ghActions) workflow(ref, file string) *ghWorkflow {
	var wf ghWorkflow
	if err := yaml.Unmarshal([]byte(a.gitOut("show", ref+":.github/workflows/"+file)), &wf); err != nil {
		a.t.Fatalf("%s at %s: %v", file, ref, err)
	}
	return &wf
}

// gitOut runs git on the repository's bare repository.
func (a *ghActions) gitOut(args ...string) string {
	a.t.Helper()
	out, err := exec.Command("git", append([]string{"--git-dir", a.git}, args...)...).Output()
	if err != nil {
		a.t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

// evidenceEvents counts the events on the evidence branch.
func (a *ghActions) evidenceEvents() int {
	out, err := exec.Command("git", "--git-dir", a.evidence, "ls-tree", "-r", "--name-only", "main", "contracts").Output()
	if err != nil {
		// No branch yet: no event.
		return 0
	}
	n := 0
	for _, p := range strings.Fields(string(out)) {
		if strings.HasSuffix(p, ".json") {
			n++
		}
	}
	return n
}

// advance runs every job whose needs are done, until none can go on.
func (run *ghRun) advance() {
	for progressed := true; progressed; {
		progressed = false
		for _, name := range run.wf.sortedJobs() {
			jr := run.jobs[name]
			if jr.result != "" && !(jr.result == "waiting" && jr.approved) {
				continue
			}
			ready := true
			for _, n := range run.wf.Jobs[name].Needs {
				if r := run.jobs[n].result; r == "" || r == "waiting" {
					ready = false
				}
			}
			if !ready {
				continue
			}
			run.runJob(name)
			progressed = progressed || jr.result != "waiting"
		}
	}
	run.a.t.Logf("run %d (%s %s, %s): %s", run.id, run.event, run.action, run.file, run.summary())
}

// summary is each job's result, and the events the ones that ran wrote.
func (run *ghRun) summary() string {
	var parts []string
	for _, name := range run.wf.sortedJobs() {
		jr := run.jobs[name]
		if jr.result == "skipped" || jr.result == "" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s (%d events)", name, jr.result, jr.events))
	}
	if len(parts) == 0 {
		return "every job skipped"
	}
	return strings.Join(parts, ", ")
}

// ran lists the jobs that ran (or run: a job waiting for a review has
// not).
func (run *ghRun) ran() []string {
	var out []string
	for _, name := range run.wf.sortedJobs() {
		if r := run.jobs[name].result; r == "success" || r == "failure" {
			out = append(out, name)
		}
	}
	return out
}

// waiting is the environment of the job waiting for a review ("": none).
func (run *ghRun) waiting() string {
	for _, name := range run.wf.sortedJobs() {
		if jr := run.jobs[name]; jr.result == "waiting" && !jr.approved {
			return run.wf.Jobs[name].Environment
		}
	}
	return ""
}

// reviewDeployment is a required reviewer's review of the run's waiting
// deployment to env; GitHub offers it to the environment's reviewers only.
func (run *ghRun) reviewDeployment(env, login, state string) {
	t := run.a.t
	t.Helper()
	if !slices.Contains(run.a.envs[env].Reviewers, login) {
		t.Fatalf("%s is no required reviewer of %s: GitHub offers them no review", login, env)
	}
	for _, name := range run.wf.sortedJobs() {
		jr := run.jobs[name]
		if jr.result != "waiting" || run.wf.Jobs[name].Environment != env {
			continue
		}
		run.a.gh.approveDeployment(run.id, env, login, state)
		if state == "rejected" {
			jr.result = "failure"
			jr.log = append(jr.log, "deployment rejected by "+login)
		} else {
			jr.approved = true
		}
		run.advance()
		return
	}
	t.Fatalf("run %d has no job waiting for a review of %s", run.id, env)
}

// conclusion is the run's: failure when a job failed.
func (run *ghRun) conclusion() string {
	for _, jr := range run.jobs {
		if jr.result == "failure" {
			return "failure"
		}
	}
	return "success"
}

// githubCtx is the github context of a job of the run.
func (run *ghRun) githubCtx(job string) map[string]any {
	var event map[string]any
	_ = json.Unmarshal(run.payload, &event)
	gh := run.a.gh
	return map[string]any{
		"event_name": run.event, "event": event, "ref": run.ref, "sha": run.sha,
		"repository": gh.owner + "/" + gh.repo, "repository_owner": gh.owner, "token": gh.token,
		"run_id": fmt.Sprint(run.id), "run_attempt": fmt.Sprint(run.attempt), "actor": run.actor,
		"workflow": run.wf.Name, "job": job, "server_url": gh.serverURL(), "api_url": gh.apiURL(),
	}
}

// runJob decides whether a job runs, and runs it on a fresh machine.
func (run *ghRun) runJob(name string) {
	a, t := run.a, run.a.t
	t.Helper()
	j, jr := run.wf.Jobs[name], run.jobs[name]
	needs := map[string]any{}
	for _, n := range j.Needs {
		needs[n] = map[string]any{"result": run.jobs[n].result, "outputs": run.jobs[n].outputs}
	}
	// A job's success() is its needs' all succeeding; failure() one
	// of them failing.
	status := statusFunctions(func() (ok, failed bool) {
		ok = true
		for _, n := range j.Needs {
			ok = ok && run.jobs[n].result == "success"
			failed = failed || run.jobs[n].result == "failure"
		}
		return ok, failed
	})
	contexts := map[string]any{"github": run.githubCtx(name), "needs": needs, "vars": toAny(a.vars), "inputs": map[string]any{},
		"secrets": map[string]any{}, "env": map[string]any{}, "runner": map[string]any{"os": "Linux"}}
	x := &ghExpr{contexts: contexts, status: status}
	env, hasEnv := a.envs[j.Environment]
	if jr.result == "" {
		ok, err := x.condition(j.If)
		if err != nil {
			t.Fatalf("job %s: %v", name, err)
		}
		if !ok {
			jr.result = "skipped"
			return
		}
		if j.Environment != "" {
			if !hasEnv {
				t.Fatalf("job %s: environment %s is not configured in the emulation", name, j.Environment)
			}
			if !slices.Contains(env.Branches, strings.TrimPrefix(run.ref, "refs/heads/")) {
				jr.result = "failure"
				jr.log = append(jr.log, fmt.Sprintf("Branch %q is not allowed to deploy to %s due to environment protection rules.", run.ref, j.Environment))
				return
			}
			if len(env.Reviewers) > 0 {
				jr.result = "waiting"
				return
			}
		}
	}
	if hasEnv {
		contexts["secrets"] = toAny(env.Secrets)
	}
	before := a.evidenceEvents()
	r := newGitHubRunner(t)
	c := githubContext{
		Event: run.event, Payload: run.payload, Ref: run.ref, SHA: run.sha, RunID: run.id, RunAttempt: run.attempt,
		Job: name, Workflow: run.wf.Name, WorkflowFile: run.file, Actor: run.actor,
		ServerURL: a.gh.serverURL(), APIURL: a.gh.apiURL(), Token: a.gh.token,
		Repository: a.gh.owner + "/" + a.gh.repo, Owner: a.gh.owner,
	}
	r.gh = &c
	x.hashFiles = func(patterns []string) (string, error) { return hashFiles(r.workspace, patterns) }
	steps := map[string]any{}
	contexts["steps"] = steps
	// A step's success() is no step before it failing.
	failed := false
	x.status = statusFunctions(func() (bool, bool) { return !failed, failed })
	for i, s := range j.Steps {
		ok, err := x.condition(s.If)
		if err != nil {
			t.Fatalf("job %s step %d: %v", name, i, err)
		}
		label := firstNonEmptyString(s.Name, s.Uses, fmt.Sprintf("step %d", i))
		if !ok {
			jr.log = append(jr.log, label+": skipped")
			if s.ID != "" {
				steps[s.ID] = map[string]any{"outputs": map[string]any{}, "outcome": "skipped", "conclusion": "skipped"}
			}
			continue
		}
		with, stepEnv := map[string]string{}, map[string]string{}
		for k, v := range s.With {
			if with[k], err = x.interpolate(v); err != nil {
				t.Fatalf("job %s step %s with.%s: %v", name, label, k, err)
			}
		}
		for k, v := range s.Env {
			if stepEnv[k], err = x.interpolate(v); err != nil {
				t.Fatalf("job %s step %s env.%s: %v", name, label, k, err)
			}
		}
		var res stepResult
		action, version, _ := strings.Cut(s.Uses, "@")
		switch {
		case s.Run != "":
			res = r.shell(s.Run, stepEnv)
		case action == "nova-platform/nova":
			// GitHub reads the action's action.yml at that ref and runs
			// its image: here, the image under test.
			c.ActionRef = strings.Fields(version)[0]
			res = r.run(a.image, step{with: with, env: stepEnv})
		case action == "actions/checkout":
			res = run.checkout(r, with)
		case action == "actions/upload-artifact":
			res = run.uploadArtifact(r, with)
		case action == "actions/download-artifact":
			res = run.downloadArtifact(r, with)
		case action == "github/codeql-action/upload-sarif":
			res = run.uploadSARIF(r, with)
		default:
			t.Fatalf("job %s step %s: %s is not emulated", name, label, s.Uses)
		}
		outcome := "success"
		if res.exitCode != 0 {
			outcome = "failure"
		}
		conclusion := outcome
		if s.ContinueOnError {
			conclusion = "success"
		}
		if conclusion == "failure" {
			failed = true
		}
		jr.log = append(jr.log, fmt.Sprintf("%s: %s (exit %d)", label, outcome, res.exitCode))
		for _, an := range res.annotations {
			jr.log = append(jr.log, fmt.Sprintf("  ::%s::%s", an.level, an.message))
		}
		if outcome == "failure" {
			jr.log = append(jr.log, "  stdout: "+res.stdout, "  stderr: "+res.stderr)
		}
		if s.ID != "" {
			steps[s.ID] = map[string]any{"outputs": toAny(res.outputs), "outcome": outcome, "conclusion": conclusion}
		}
	}
	jr.outputs = map[string]any{}
	for k, v := range j.Outputs {
		out, err := x.interpolate(v)
		if err != nil {
			t.Fatalf("job %s output %s: %v", name, k, err)
		}
		jr.outputs[k] = out
	}
	jr.result = "success"
	if failed {
		jr.result = "failure"
	}
	jr.events = a.evidenceEvents() - before
}

// statusFunctions answers success(), failure(), cancelled() and always()
// from what came before: whether it all succeeded, whether any failed.
// Nothing is ever cancelled here.
func statusFunctions(before func() (ok, failed bool)) func(string) bool {
	return func(fn string) bool {
		ok, failed := before()
		switch fn {
		case "always":
			return true
		case "cancelled":
			return false
		case "failure":
			return failed
		}
		return ok
	}
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func firstNonEmptyString(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
