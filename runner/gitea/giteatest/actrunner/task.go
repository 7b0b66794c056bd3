package actrunner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	runnerv1 "code.gitea.io/actions-proto-go/runner/v1"
	"github.com/nektos/act/pkg/model"
	"github.com/nektos/act/pkg/runner"
	"google.golang.org/protobuf/types/known/structpb"
	"gopkg.in/yaml.v3"
)

// decodeErrors collects what act could not decode in a workflow. act's
// default reaction is log.Fatalf, which would end the whole test binary
// on one malformed workflow; here the task running at the time fails
// with the reason instead.
var decodeErrors struct {
	sync.Mutex
	list []string
}

func init() {
	model.OnDecodeNodeError = func(node yaml.Node, out any, err error) {
		decodeErrors.Lock()
		defer decodeErrors.Unlock()
		decodeErrors.list = append(decodeErrors.list, fmt.Sprintf("line %d: decoding %T: %v", node.Line, out, err))
	}
}

func decodeErrorCount() int {
	decodeErrors.Lock()
	defer decodeErrors.Unlock()
	return len(decodeErrors.list)
}

func decodeErrorsSince(n int) []string {
	decodeErrors.Lock()
	defer decodeErrors.Unlock()
	return append([]string(nil), decodeErrors.list[n:]...)
}

// execute runs one task and reports it to Gitea. It never fails the test:
// a job that cannot run is a failed task in Gitea with the reason in its
// log, which is what a test waiting on Gitea then sees.
func (r *Runner) execute(ctx context.Context, task *runnerv1.Task) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rep := newReporter(r.client, task, cancel, func(lines ...string) { r.appendLog(task.GetId(), lines...) })
	stop := rep.start(ctx)
	result, err := r.run(ctx, task, rep)
	stop()
	if err := rep.close(result, err, ctx.Err() != nil); err != nil {
		r.mu.Lock()
		r.reportErr = err
		r.mu.Unlock()
	}
}

// run executes the task's job with act and returns act's job result
// ("success", "failure", "skipped", or empty when the job never ran).
func (r *Runner) run(ctx context.Context, task *runnerv1.Task, rep *reporter) (string, error) {
	fields := task.GetContext().GetFields()
	str := func(k string) string { return fields[k].GetStringValue() }
	rep.logf("%s (%s) received task %d of job %s, triggered by %s", r.name, Version, task.GetId(), str("job"), str("event_name"))

	decodedBefore := decodeErrorCount()
	payload, err := readablePayload(task.GetWorkflowPayload())
	if err != nil {
		return "", err
	}
	wf, err := model.ReadWorkflow(bytes.NewReader(payload), false)
	if err != nil {
		return "", fmt.Errorf("reading the workflow Gitea sent: %w", err)
	}
	ids := wf.GetJobIDs()
	if len(ids) != 1 {
		return "", fmt.Errorf("the workflow Gitea sent has %d jobs, want exactly one", len(ids))
	}
	jobID := ids[0]
	job := wf.GetJob(jobID)
	// Gitea has run the jobs this one needs; act reads their outputs and
	// results from the workflow, so they are added as finished jobs.
	// Gitea erases a job's needs from the workflow it sends and hands
	// them over with the task (as act_runner reads them): they are put
	// back, or act would see no needs context at all.
	needs := slices.Sorted(maps.Keys(task.GetNeeds()))
	for _, need := range job.Needs() {
		if !slices.Contains(needs, need) {
			return "", fmt.Errorf("job %s needs %s, which Gitea did not hand over", jobID, need)
		}
	}
	for _, need := range needs {
		n := task.GetNeeds()[need]
		wf.Jobs[need] = &model.Job{Name: need, Outputs: n.GetOutputs(), Result: resultName(n.GetResult())}
	}
	if len(needs) > 0 && len(job.Needs()) == 0 {
		if err := job.RawNeeds.Encode(needs); err != nil {
			return "", fmt.Errorf("restoring the needs of job %s: %w", jobID, err)
		}
	}
	rep.setSteps(job)

	dir := filepath.Join(r.root, "tasks", strconv.FormatInt(task.GetId(), 10))
	workspace := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(workspace, 0o755); err != nil {
		return "", fmt.Errorf("creating the workspace: %w", err)
	}
	event, err := json.Marshal(fields["event"].GetStructValue().AsMap())
	if err != nil {
		return "", fmt.Errorf("encoding the event payload: %w", err)
	}
	eventPath := filepath.Join(dir, "event.json")
	if err := os.WriteFile(eventPath, event, 0o600); err != nil {
		return "", fmt.Errorf("writing the event payload: %w", err)
	}

	secrets := map[string]string{}
	for k, v := range task.GetSecrets() {
		secrets[k] = v
	}
	env := r.jobEnv(fields)
	// act_runner hands the runtime token to the job and masks it like a
	// secret.
	if v := env["ACTIONS_RUNTIME_TOKEN"]; v != "" {
		secrets["ACTIONS_RUNTIME_TOKEN"] = v
	}
	rep.addMasks(secrets)

	platforms := map[string]string{}
	for _, label := range job.RunsOn() {
		platforms[strings.ToLower(label)] = "-self-hosted"
	}
	token := str("token")
	for _, k := range []string{"GITEA_TOKEN", "GITHUB_TOKEN"} {
		if v := secrets[k]; v != "" {
			token = v
			break
		}
	}
	host := r.srv.URL
	if u, err := url.Parse(r.srv.URL); err == nil {
		host = u.Host
	}
	cfg := &runner.Config{
		Actor:          str("actor"),
		Workdir:        workspace,
		ActionCacheDir: filepath.Join(r.root, "cache"),
		EventName:      str("event_name"),
		EventPath:      eventPath,
		DefaultBranch:  defaultBranch(fields),
		LogOutput:      true,
		Env:            env,
		Secrets:        secrets,
		Vars:           task.GetVars(),
		Token:          token,
		Platforms:      platforms,
		GitHubInstance: host,
		AutoRemove:     true,
		NoSkipCheckout: true,
	}
	act, err := runner.New(cfg)
	if err != nil {
		return "", fmt.Errorf("configuring act: %w", err)
	}
	rep.logf("workflow prepared")
	plan := &model.Plan{Stages: []*model.Stage{{Runs: []*model.Run{{Workflow: wf, JobID: jobID}}}}}
	execErr := act.NewPlanExecutor(plan)(runner.WithJobLoggerFactory(ctx, rep))
	if bad := decodeErrorsSince(decodedBefore); len(bad) > 0 {
		return job.Result, fmt.Errorf("act could not decode parts of the workflow: %s", strings.Join(bad, "; "))
	}
	rep.setOutputs(job.Outputs)
	return job.Result, execErr
}

// jobEnv is the environment act builds the github context from (it reads
// GITHUB_* and SHA_REF from its Env, where act_runner's fork takes a preset
// context) plus what act_runner gives every job.
func (r *Runner) jobEnv(fields map[string]*structpb.Value) map[string]string {
	str := func(k string) string { return fields[k].GetStringValue() }
	env := map[string]string{}
	for k, v := range r.env {
		env[k] = v
	}
	// act_runner's server_url is its own address of Gitea, registered
	// without a trailing slash; Gitea's context field has one.
	server := strings.TrimSuffix(r.srv.URL, "/")
	for k, v := range map[string]string{
		"GITHUB_RUN_ID":                str("run_id"),
		"GITHUB_RUN_NUMBER":            str("run_number"),
		"GITHUB_RUN_ATTEMPT":           str("run_attempt"),
		"GITHUB_REPOSITORY":            str("repository"),
		"GITHUB_REPOSITORY_OWNER":      str("repository_owner"),
		"GITHUB_REF":                   str("ref"),
		"SHA_REF":                      str("sha"),
		"GITHUB_REF_NAME":              str("ref_name"),
		"GITHUB_REF_TYPE":              str("ref_type"),
		"GITHUB_BASE_REF":              str("base_ref"),
		"GITHUB_HEAD_REF":              str("head_ref"),
		"GITHUB_RETENTION_DAYS":        str("retention_days"),
		"GITHUB_SERVER_URL":            server,
		"GITHUB_API_URL":               server + "/api/v1",
		"GITEA_ACTIONS":                "true",
		"GITEA_ACTIONS_RUNNER_VERSION": Version,
		"ACTIONS_RUNTIME_URL":          server + "/api/actions_pipeline/",
		"ACTIONS_RESULTS_URL":          server,
		"ACTIONS_RUNTIME_TOKEN":        firstNonEmpty(str("gitea_runtime_token"), str("token")),
	} {
		env[k] = v
	}
	return env
}

func defaultBranch(fields map[string]*structpb.Value) string {
	repo := fields["event"].GetStructValue().GetFields()["repository"].GetStructValue().GetFields()
	return repo["default_branch"].GetStringValue()
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// resultName is a Result as act's job results spell it.
func resultName(r runnerv1.Result) string {
	switch r {
	case runnerv1.Result_RESULT_SUCCESS:
		return "success"
	case runnerv1.Result_RESULT_FAILURE:
		return "failure"
	case runnerv1.Result_RESULT_CANCELLED:
		return "cancelled"
	case runnerv1.Result_RESULT_SKIPPED:
		return "skipped"
	}
	return ""
}
