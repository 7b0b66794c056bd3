package imagetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// githubRunner lays out one job's directories as GitHub's runner does and
// runs a container action step as it does. The shape comes from the
// runner's source (actions/runner, src/Runner.Worker:
// Handlers/ContainerActionHandler.cs for the mounts, the environment and
// its path translation; Container/DockerCommandManager.cs DockerRun for the
// command line; FileCommandManager.cs for the file-command files and how
// they are read) and from the command line it logs for a container action
// on a hosted runner today:
//
//	docker run --name <image>_<6 hex> --label <6 hex> --workdir /github/workspace --rm
//	  -e "INPUT_<NAME>" … -e "HOME" -e "GITHUB_JOB" … -e "ACTIONS_RESULTS_URL"
//	  -e GITHUB_ACTIONS=true -e CI=true
//	  -v "/var/run/docker.sock":"/var/run/docker.sock"
//	  -v "<work>/_temp":"/github/runner_temp"
//	  -v "<work>/_temp/_github_home":"/github/home"
//	  -v "<work>/_temp/_github_workflow":"/github/workflow"
//	  -v "<work>/_temp/_runner_file_commands":"/github/file_commands"
//	  -v "<work>/<repo>/<repo>":"/github/workspace"
//	  <image>
//
// Values are not on the command line: `-e NAME` takes each from docker's
// own environment, where the runner puts them after rewriting every host
// path under a mount to its path in the container (GITHUB_OUTPUT becomes
// /github/file_commands/set_output_<guid>). Every input of action.yml is
// passed, with its default when the step gives none.
type githubRunner struct {
	t *testing.T
	// root is the runner's directory; work its _work, temp its _temp.
	root, work, temp string
	// workspace is GITHUB_WORKSPACE: <work>/<repo>/<repo>.
	workspace string
	// home, workflow and fileCommands are the directories under temp
	// mounted at /github/home, /github/workflow and /github/file_commands.
	home, workflow, fileCommands string
	// sha is the commit checked out in the workspace.
	sha string
	// gh is the run the job belongs to; nil is a push to main on
	// github.com, without a token.
	gh *githubContext
}

// githubContext is what the runner knows of the workflow run a step
// belongs to, and puts in the step's environment.
type githubContext struct {
	Event   string
	Payload []byte
	// Ref and SHA are GITHUB_REF and GITHUB_SHA: for the events that run
	// the default branch's copy of a workflow, the default branch and its
	// head, whatever the pull request.
	Ref, SHA           string
	RunID, RunAttempt  int64
	Job, Workflow      string
	WorkflowFile       string
	Actor              string
	ServerURL, APIURL  string
	Token              string
	ActionRef          string
	Repository, Owner  string
	DefaultBranchValue string
}

// context is the run of the step, with the defaults of a push to main.
func (r *githubRunner) context() githubContext {
	if r.gh != nil {
		return *r.gh
	}
	return githubContext{
		Event: "push", Payload: r.pushEvent(), Ref: "refs/heads/main", SHA: r.sha, RunID: 17014420931, RunAttempt: 1,
		Job: "deploy", Workflow: "deploy", WorkflowFile: "deploy.yml", Actor: "octocat",
		ServerURL: "https://github.com", APIURL: "https://api.github.com", ActionRef: "v1",
		Repository: repoOwner + "/" + repoName, Owner: repoOwner,
	}
}

// The repository the emulated workflow runs in.
const (
	repoOwner = "acme"
	repoName  = "hello"
)

func newGitHubRunner(t *testing.T) *githubRunner {
	t.Helper()
	root := t.TempDir()
	r := &githubRunner{t: t, root: root, work: filepath.Join(root, "_work")}
	r.temp = filepath.Join(r.work, "_temp")
	r.workspace = filepath.Join(r.work, repoName, repoName)
	r.home = filepath.Join(r.temp, "_github_home")
	r.workflow = filepath.Join(r.temp, "_github_workflow")
	r.fileCommands = filepath.Join(r.temp, "_runner_file_commands")
	for _, d := range []string{r.workspace, r.home, r.workflow, r.fileCommands} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	handBackOnCleanup(t, root)
	return r
}

// mounts are the runner's volumes, host path to container path, in the
// order of its command line.
func (r *githubRunner) mounts() [][2]string {
	var m [][2]string
	// The runner always mounts the socket; a machine whose engine listens
	// elsewhere has none to mount, and docker would make a directory there.
	if fi, err := os.Stat("/var/run/docker.sock"); err == nil && fi.Mode()&os.ModeSocket != 0 {
		m = append(m, [2]string{"/var/run/docker.sock", "/var/run/docker.sock"})
	}
	return append(m,
		[2]string{r.temp, "/github/runner_temp"},
		[2]string{r.home, "/github/home"},
		[2]string{r.workflow, "/github/workflow"},
		[2]string{r.fileCommands, "/github/file_commands"},
		[2]string{r.workspace, "/github/workspace"},
	)
}

// toContainer rewrites a host path under a mount to the container's path,
// as the runner does for every environment value; the longest mount wins,
// so _temp/_github_home is /github/home, not /github/runner_temp/….
func (r *githubRunner) toContainer(v string) string {
	best := ""
	for _, m := range r.mounts() {
		if (v == m[0] || strings.HasPrefix(v, m[0]+"/")) && len(m[0]) > len(best) {
			best = m[0]
		}
	}
	if best == "" {
		return v
	}
	for _, m := range r.mounts() {
		if m[0] == best {
			return m[1] + strings.TrimPrefix(v, best)
		}
	}
	return v
}

// toHost is toContainer's inverse, for paths nova reports.
func (r *githubRunner) toHost(v string) string {
	best := [2]string{}
	for _, m := range r.mounts() {
		if (v == m[1] || strings.HasPrefix(v, m[1]+"/")) && len(m[1]) > len(best[1]) {
			best = m
		}
	}
	if best[1] == "" {
		return v
	}
	return best[0] + strings.TrimPrefix(v, best[1])
}

// step is one `uses:` step: its `with:` and its `env:`.
type step struct {
	with map[string]string
	env  map[string]string
}

// stepResult is what the runner makes of a finished container action.
type stepResult struct {
	exitCode       int
	stdout, stderr string
	// outputs are the step's outputs, read from GITHUB_OUTPUT as the
	// runner reads it; summary is GITHUB_STEP_SUMMARY's content.
	outputs map[string]string
	summary string
	// env, path and state are what the action wrote to GITHUB_ENV,
	// GITHUB_PATH and GITHUB_STATE.
	env, path, state string
	// annotations are the workflow commands on stdout that become
	// annotations.
	annotations []annotation
}

// run runs the action's image as a step of the job.
func (r *githubRunner) run(image string, s step) stepResult {
	t := r.t
	t.Helper()
	manifest := readActionManifest(t)

	suffix, files := r.fileCommandFiles()

	// The environment in the order the runner builds it: the step's env,
	// the inputs, HOME, then the github and runner contexts and the
	// Actions service's endpoints.
	var names []string
	values := map[string]string{}
	set := func(k, v string) {
		if _, ok := values[k]; !ok {
			names = append(names, k)
		}
		values[k] = v
	}
	for _, k := range sortedKeys(s.env) {
		set(k, s.env[k])
	}
	for k := range s.with {
		if _, ok := manifest.Inputs[k]; !ok {
			t.Fatalf("step gives input %q, which action.yml does not declare", k)
		}
	}
	for _, name := range sortedKeys(manifest.Inputs) {
		v, ok := s.with[name]
		if !ok {
			v = r.evalDefault(name, manifest.Inputs[name].Default)
		}
		set("INPUT_"+strings.ToUpper(strings.ReplaceAll(name, " ", "_")), v)
	}
	set("HOME", r.home)
	for _, kv := range r.githubEnv(files) {
		set(kv[0], kv[1])
	}
	// The Actions service's endpoints and the job's runtime token:
	// present in every container action's environment, and nothing nova
	// may print.
	for _, kv := range [][2]string{
		{"ACTIONS_RUNTIME_URL", "https://pipelines.actions.githubusercontent.com/abc/"},
		{"ACTIONS_RUNTIME_TOKEN", "runtime-token-" + suffix},
		{"ACTIONS_CACHE_URL", "https://artifactcache.actions.githubusercontent.com/abc/"},
		{"ACTIONS_RESULTS_URL", "https://results-receiver.actions.githubusercontent.com/"},
		{"ACTIONS_ORCHESTRATION_ID", suffix},
	} {
		set(kv[0], kv[1])
	}

	sum := sha256.Sum256([]byte(r.root))
	name := regexp.MustCompile(`[^a-zA-Z0-9]`).ReplaceAllString(image, "") + "_" + suffix[:6]
	args := []string{"run", "--name", name, "--label", hex.EncodeToString(sum[:])[:6], "--workdir", "/github/workspace", "--rm"}
	env := map[string]string{}
	for _, k := range names {
		args = append(args, "-e", k)
		env[k] = r.toContainer(values[k])
	}
	args = append(args, "-e", "GITHUB_ACTIONS=true", "-e", "CI=true")
	for _, m := range r.mounts() {
		args = append(args, "-v", m[0]+":"+m[1])
	}
	args = append(args, image)

	// A test that times out kills the docker client, not the container.
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "--force", name).Run() })
	res := r.exec(commandContext(t.Context(), env, "docker", args...))
	if res.exitCode != 0 {
		t.Logf("docker %s: exit %d", strings.Join(args, " "), res.exitCode)
	}
	if res.exitCode == 125 {
		t.Fatalf("docker could not start the container (exit 125):\n%s", res.stderr)
	}
	r.readFileCommands(&res, files)
	for k := range res.outputs {
		if _, ok := manifest.Outputs[k]; !ok {
			t.Errorf("the action set output %q, which action.yml does not declare", k)
		}
	}
	return res
}

// fileCommandFiles creates the file-command files, empty, as the runner
// does before each step, named by a fresh suffix.
func (r *githubRunner) fileCommandFiles() (string, map[string]string) {
	suffix := newGUID()
	files := map[string]string{}
	for _, f := range []struct{ variable, prefix string }{
		{"GITHUB_PATH", "add_path_"}, {"GITHUB_ENV", "set_env_"}, {"GITHUB_STATE", "save_state_"},
		{"GITHUB_OUTPUT", "set_output_"}, {"GITHUB_STEP_SUMMARY", "step_summary_"},
	} {
		files[f.variable] = filepath.Join(r.fileCommands, f.prefix+suffix)
		if err := os.WriteFile(files[f.variable], nil, 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	return suffix, files
}

// readFileCommands reads what a finished step wrote to its files.
func (r *githubRunner) readFileCommands(res *stepResult, files map[string]string) {
	t := r.t
	res.outputs = parseFileCommand(t, readFile(t, files["GITHUB_OUTPUT"]))
	res.summary = readFile(t, files["GITHUB_STEP_SUMMARY"])
	res.env, res.path, res.state = readFile(t, files["GITHUB_ENV"]), readFile(t, files["GITHUB_PATH"]), readFile(t, files["GITHUB_STATE"])
	res.annotations = parseAnnotations(res.stdout)
}

// shell runs a `run:` step on the runner's machine as the runner does on
// Linux: the script in a file, `bash --noprofile --norc -eo pipefail`,
// in the workspace, with the github and runner contexts and the step's
// env in the environment.
func (r *githubRunner) shell(script string, env map[string]string) stepResult {
	t := r.t
	t.Helper()
	_, files := r.fileCommandFiles()
	file := filepath.Join(r.temp, newGUID()+".sh")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"PATH": os.Getenv("PATH"), "HOME": filepath.Join(r.root, "home"), "CI": "true", "GITHUB_ACTIONS": "true"}
	for _, kv := range r.githubEnv(files) {
		vars[kv[0]] = kv[1]
	}
	for k, v := range env {
		vars[k] = v
	}
	cmd := commandContext(t.Context(), vars, "bash", "--noprofile", "--norc", "-eo", "pipefail", file)
	cmd.Dir = r.workspace
	res := r.exec(cmd)
	r.readFileCommands(&res, files)
	return res
}

// exec runs a step's process: its output, and its exit code, which only
// a process that could not start at all has none of.
func (r *githubRunner) exec(cmd *exec.Cmd) stepResult {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := stepResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.exitCode = exit.ExitCode()
	case err != nil:
		r.t.Fatalf("%s: %v\n%s", cmd.Path, err, stderr.String())
	}
	return res
}

// githubEnv is the github and runner contexts as the runner puts them in
// a step's environment, with the step's file-command files; it writes the
// event to /github/workflow/event.json.
func (r *githubRunner) githubEnv(files map[string]string) [][2]string {
	t := r.t
	c := r.context()
	event := filepath.Join(r.workflow, "event.json")
	if err := os.WriteFile(event, c.Payload, 0o644); err != nil {
		t.Fatal(err)
	}
	refName := c.Ref[strings.LastIndex(c.Ref, "/")+1:]
	return [][2]string{
		{"GITHUB_JOB", c.Job},
		{"GITHUB_REF", c.Ref},
		{"GITHUB_SHA", c.SHA},
		{"GITHUB_REPOSITORY", c.Repository},
		{"GITHUB_REPOSITORY_OWNER", c.Owner},
		{"GITHUB_REPOSITORY_OWNER_ID", "1001"},
		{"GITHUB_RUN_ID", strconv.FormatInt(c.RunID, 10)},
		{"GITHUB_RUN_NUMBER", "7"},
		{"GITHUB_RETENTION_DAYS", "90"},
		{"GITHUB_RUN_ATTEMPT", strconv.FormatInt(c.RunAttempt, 10)},
		{"GITHUB_ACTOR_ID", "583231"},
		{"GITHUB_ACTOR", c.Actor},
		{"GITHUB_WORKFLOW", c.Workflow},
		{"GITHUB_HEAD_REF", ""},
		{"GITHUB_BASE_REF", ""},
		{"GITHUB_EVENT_NAME", c.Event},
		{"GITHUB_SERVER_URL", c.ServerURL},
		{"GITHUB_API_URL", c.APIURL},
		{"GITHUB_GRAPHQL_URL", c.APIURL + "/graphql"},
		{"GITHUB_REF_NAME", refName},
		{"GITHUB_REF_PROTECTED", "false"},
		{"GITHUB_REF_TYPE", "branch"},
		{"GITHUB_WORKFLOW_REF", c.Repository + "/.github/workflows/" + c.WorkflowFile + "@" + c.Ref},
		{"GITHUB_WORKFLOW_SHA", c.SHA},
		{"GITHUB_REPOSITORY_ID", "1296269"},
		{"GITHUB_TRIGGERING_ACTOR", c.Actor},
		{"GITHUB_WORKSPACE", r.workspace},
		{"GITHUB_ACTION", "nova"},
		{"GITHUB_EVENT_PATH", event},
		{"GITHUB_ACTION_REPOSITORY", "nova-platform/nova"},
		{"GITHUB_ACTION_REF", c.ActionRef},
		{"GITHUB_PATH", files["GITHUB_PATH"]},
		{"GITHUB_ENV", files["GITHUB_ENV"]},
		{"GITHUB_STEP_SUMMARY", files["GITHUB_STEP_SUMMARY"]},
		{"GITHUB_STATE", files["GITHUB_STATE"]},
		{"GITHUB_OUTPUT", files["GITHUB_OUTPUT"]},
		{"RUNNER_OS", "Linux"},
		{"RUNNER_ARCH", "X64"},
		{"RUNNER_NAME", "GitHub Actions 1000000001"},
		{"RUNNER_ENVIRONMENT", "github-hosted"},
		{"RUNNER_TOOL_CACHE", "/opt/hostedtoolcache"},
		{"RUNNER_TEMP", r.temp},
		{"RUNNER_WORKSPACE", filepath.Join(r.work, repoName)},
	}
}

// evalDefault evaluates an input's default as the runner would. Only the
// expressions action.yml uses are known here; a new one fails the test
// rather than be passed on as text.
func (r *githubRunner) evalDefault(name, def string) string {
	if !strings.Contains(def, "${{") {
		return def
	}
	switch strings.Join(strings.Fields(def), "") {
	case "${{github.token}}":
		// The job's token: none outside a run with a GitHub to call.
		return r.context().Token
	}
	r.t.Fatalf("input %q: default %q is an expression this emulation does not evaluate", name, def)
	return ""
}

// pushEvent is the push event the runner writes to
// /github/workflow/event.json, reduced to the fields a push event always
// has.
func (r *githubRunner) pushEvent() []byte {
	return []byte(`{
  "ref": "refs/heads/main",
  "before": "0000000000000000000000000000000000000000",
  "after": "` + r.sha + `",
  "created": false,
  "deleted": false,
  "forced": false,
  "head_commit": {"id": "` + r.sha + `", "message": "hello"},
  "pusher": {"name": "octocat", "email": "octocat@example.com"},
  "repository": {"id": 1296269, "name": "` + repoName + `", "full_name": "` + repoOwner + "/" + repoName + `", "owner": {"login": "` + repoOwner + `"}, "default_branch": "main"},
  "sender": {"login": "octocat", "id": 583231}
}
`)
}

// parseFileCommand reads GITHUB_OUTPUT (or GITHUB_ENV) as the runner's
// EnvFileKeyValuePairs does: NAME=VALUE lines, and NAME<<DELIMITER
// heredocs whose value is every line up to the delimiter's.
func parseFileCommand(t *testing.T, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line == "" {
			continue
		}
		eq, heredoc := strings.Index(line, "="), strings.Index(line, "<<")
		switch {
		case eq >= 0 && (heredoc < 0 || eq < heredoc):
			out[line[:eq]] = line[eq+1:]
		case heredoc >= 0:
			name, delim := line[:heredoc], line[heredoc+2:]
			if name == "" || delim == "" {
				t.Fatalf("file command line %q: the runner rejects an empty name or delimiter", line)
			}
			var value []string
			for i++; ; i++ {
				if i >= len(lines) {
					t.Fatalf("file command %s: delimiter %q never comes; the runner fails the step", name, delim)
				}
				if lines[i] == delim {
					break
				}
				value = append(value, lines[i])
			}
			out[name] = strings.Join(value, "\n")
		default:
			t.Fatalf("file command line %q is neither NAME=VALUE nor NAME<<DELIMITER; the runner fails the step", line)
		}
	}
	return out
}

// annotation is one ::error, ::warning or ::notice workflow command.
type annotation struct {
	level   string
	props   map[string]string
	message string
}

// parseAnnotations reads the annotation commands from a step's stdout,
// unescaping properties and message as the runner does.
func parseAnnotations(stdout string) []annotation {
	var out []annotation
	for _, line := range strings.Split(stdout, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "::") {
			continue
		}
		cmd, msg, ok := strings.Cut(line[2:], "::")
		if !ok {
			continue
		}
		level, props, _ := strings.Cut(cmd, " ")
		if !slices.Contains([]string{"error", "warning", "notice"}, level) {
			continue
		}
		a := annotation{level: level, props: map[string]string{}, message: unescapeData(msg)}
		for _, p := range strings.Split(props, ",") {
			if k, v, ok := strings.Cut(p, "="); ok {
				a.props[k] = unescapeProperty(v)
			}
		}
		out = append(out, a)
	}
	return out
}

func unescapeData(s string) string {
	return strings.NewReplacer("%0D", "\r", "%0A", "\n", "%25", "%").Replace(s)
}

func unescapeProperty(s string) string {
	return strings.NewReplacer("%0D", "\r", "%0A", "\n", "%3A", ":", "%2C", ",", "%25", "%").Replace(s)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// newGUID is a random GUID in the runner's format, which names the
// file-command files.
func newGUID() string {
	h := randomHex(16)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
