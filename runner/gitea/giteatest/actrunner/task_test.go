package actrunner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	runnerv1 "code.gitea.io/actions-proto-go/runner/v1"
	"connectrpc.com/connect"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/nova-platform/nova/runner/gitea/giteatest"
)

// fakeService is Gitea's runner service as far as a running task talks
// to it: it keeps the log rows the way Gitea does (acknowledging by
// index) and the last task state.
type fakeService struct {
	mu      sync.Mutex
	rows    []string
	noMore  bool
	state   *runnerv1.TaskState
	outputs map[string]string
}

func (f *fakeService) Register(context.Context, *connect.Request[runnerv1.RegisterRequest]) (*connect.Response[runnerv1.RegisterResponse], error) {
	return nil, errors.New("not in this test")
}

func (f *fakeService) Declare(context.Context, *connect.Request[runnerv1.DeclareRequest]) (*connect.Response[runnerv1.DeclareResponse], error) {
	return nil, errors.New("not in this test")
}

func (f *fakeService) FetchTask(context.Context, *connect.Request[runnerv1.FetchTaskRequest]) (*connect.Response[runnerv1.FetchTaskResponse], error) {
	return nil, errors.New("not in this test")
}

func (f *fakeService) UpdateTask(_ context.Context, req *connect.Request[runnerv1.UpdateTaskRequest]) (*connect.Response[runnerv1.UpdateTaskResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = req.Msg.GetState()
	if len(req.Msg.GetOutputs()) > 0 {
		f.outputs = req.Msg.GetOutputs()
	}
	return connect.NewResponse(&runnerv1.UpdateTaskResponse{State: &runnerv1.TaskState{Id: f.state.GetId()}}), nil
}

func (f *fakeService) UpdateLog(_ context.Context, req *connect.Request[runnerv1.UpdateLogRequest]) (*connect.Response[runnerv1.UpdateLogResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ack := int64(len(f.rows))
	rows := req.Msg.GetRows()
	if len(rows) == 0 || req.Msg.GetIndex() > ack || int64(len(rows))+req.Msg.GetIndex() <= ack {
		return connect.NewResponse(&runnerv1.UpdateLogResponse{AckIndex: ack}), nil
	}
	for _, r := range rows[ack-req.Msg.GetIndex():] {
		f.rows = append(f.rows, r.GetContent())
	}
	f.noMore = f.noMore || req.Msg.GetNoMore()
	return connect.NewResponse(&runnerv1.UpdateLogResponse{AckIndex: int64(len(f.rows))}), nil
}

// multiLineSecret is printed by a job line by line, as a PEM key is.
const multiLineSecret = "-----BEGIN TEST KEY-----\nAAAAsecretlineBBBB\n-----END TEST KEY-----"

// TestExecute runs jobs with act in host mode the way a task from Gitea
// arrives, and checks what Gitea would be told: the task's result, each
// step's result and its range of log rows, the job's outputs, and that
// secrets never reach a row.
func TestExecute(t *testing.T) {
	tests := []struct {
		name     string
		workflow string
		needs    map[string]*runnerv1.TaskNeed
		result   runnerv1.Result
		steps    []runnerv1.Result
		// stepLog is a line each step's rows must hold, by step.
		stepLog []string
		outputs map[string]string
		inLog   []string
	}{{
		name: "steps succeed, secrets are masked",
		workflow: `name: w
on: pull_request
jobs:
  build:
    runs-on: ubuntu-latest
    outputs:
      greeting: ${{ steps.hello.outputs.greeting }}
    steps:
      - id: hello
        env:
          SECRET: ${{ secrets.MY_SECRET }}
          KEY: ${{ secrets.MY_KEY }}
        run: |
          echo "hello from ${{ github.event_name }} on ${{ github.repository }} at ${{ github.sha }}"
          echo "secret: $SECRET"
          printf '%s\n' "$KEY"
          echo "greeting=hi" >> "$GITHUB_OUTPUT"
      - name: second
        run: echo "token ${{ github.token }} var ${{ vars.MY_VAR }} server ${{ github.server_url }}"
`,
		result:  runnerv1.Result_RESULT_SUCCESS,
		steps:   []runnerv1.Result{runnerv1.Result_RESULT_SUCCESS, runnerv1.Result_RESULT_SUCCESS},
		stepLog: []string{"hello from pull_request on acme/app at 0123456789abcdef0123456789abcdef01234567", "token *** var var-value server http://127.0.0.1:3000"},
		outputs: map[string]string{"greeting": "hi"},
		inLog:   []string{"secret: ***"},
	}, {
		// Gitea's job parser writes the numbers it read back as strings.
		name: "a job as Gitea writes it, timeout-minutes and fail-fast quoted",
		workflow: `name: w
on:
  pull_request:
    types: [opened]
jobs:
  build:
    name: build
    runs-on: ubuntu-latest
    timeout-minutes: "60"
    strategy:
      fail-fast: "false"
    steps:
      - name: quick
        timeout-minutes: "5"
        run: echo "in time"
`,
		result:  runnerv1.Result_RESULT_SUCCESS,
		steps:   []runnerv1.Result{runnerv1.Result_RESULT_SUCCESS},
		stepLog: []string{"in time"},
	}, {
		name: "a failing step fails the job and skips the rest",
		workflow: `name: w
on: push
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - run: echo "before the failure"
      - run: exit 3
      - run: echo "never"
`,
		// The failing step's own last lines may be lost: act v0.2.89's
		// host environment returns from a failed command without waiting
		// for the copy of its terminal's output (host_environment.go,
		// exec), so nothing this runner could wait for marks them.
		result:  runnerv1.Result_RESULT_FAILURE,
		steps:   []runnerv1.Result{runnerv1.Result_RESULT_SUCCESS, runnerv1.Result_RESULT_FAILURE, runnerv1.Result_RESULT_SKIPPED},
		stepLog: []string{"before the failure", "", ""},
	}, {
		name: "a job whose if is false is skipped",
		workflow: `name: w
on: issue_comment
jobs:
  build:
    if: github.event_name == 'push'
    runs-on: ubuntu-latest
    steps:
      - run: echo "never"
`,
		result:  runnerv1.Result_RESULT_SKIPPED,
		steps:   []runnerv1.Result{runnerv1.Result_RESULT_SKIPPED},
		stepLog: []string{""},
	}, {
		name: "a job reads the outputs of the jobs it needs",
		workflow: `name: w
on: push
jobs:
  deploy:
    needs: [build]
    runs-on: ubuntu-latest
    steps:
      - run: echo "built ${{ needs.build.outputs.artifact }} (${{ needs.build.result }})"
`,
		needs:   map[string]*runnerv1.TaskNeed{"build": {Outputs: map[string]string{"artifact": "app.tar"}, Result: runnerv1.Result_RESULT_SUCCESS}},
		result:  runnerv1.Result_RESULT_SUCCESS,
		steps:   []runnerv1.Result{runnerv1.Result_RESULT_SUCCESS},
		stepLog: []string{"built app.tar (success)"},
	}, {
		// Gitea erases the needs from the job it sends and hands them over
		// with the task; a job's if reads them (a summary after every job).
		name: "a job as Gitea sends it, its needs erased, reads them",
		workflow: `name: w
on: push
jobs:
  summary:
    if: always() && needs.select.result == 'success'
    runs-on: ubuntu-latest
    steps:
      - run: echo "base ${{ needs.select.outputs.base }}, run ${{ needs.run.result }}"
`,
		needs: map[string]*runnerv1.TaskNeed{
			"select": {Outputs: map[string]string{"base": "abc"}, Result: runnerv1.Result_RESULT_SUCCESS},
			"run":    {Result: runnerv1.Result_RESULT_FAILURE},
		},
		result:  runnerv1.Result_RESULT_SUCCESS,
		steps:   []runnerv1.Result{runnerv1.Result_RESULT_SUCCESS},
		stepLog: []string{"base abc, run failure"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeService{}
			r := &Runner{
				srv: &giteatest.Server{URL: "http://127.0.0.1:3000"}, client: fake, name: "test",
				root: t.TempDir(), env: hostEnv(t.TempDir()), logs: map[int64][]string{},
			}
			task := &runnerv1.Task{
				Id: 7, WorkflowPayload: []byte(tc.workflow), Context: taskContext(t),
				Secrets: map[string]string{"GITEA_TOKEN": "job-token-value", "GITHUB_TOKEN": "job-token-value", "MY_SECRET": "hunter2-secret", "MY_KEY": multiLineSecret},
				Vars:    map[string]string{"MY_VAR": "var-value"}, Needs: tc.needs,
			}
			r.execute(t.Context(), task)

			fake.mu.Lock()
			defer fake.mu.Unlock()
			log := strings.Join(fake.rows, "\n")
			if got := fake.state.GetResult(); got != tc.result {
				t.Errorf("task result %s, want %s\n%s", got, tc.result, log)
			}
			if !fake.noMore {
				t.Error("the log was never marked complete")
			}
			var steps []runnerv1.Result
			for i, s := range fake.state.GetSteps() {
				steps = append(steps, s.GetResult())
				rows := fake.rows[s.GetLogIndex() : s.GetLogIndex()+s.GetLogLength()]
				if i < len(tc.stepLog) && tc.stepLog[i] != "" && !slices.Contains(rows, tc.stepLog[i]) {
					t.Errorf("step %d's rows %q lack %q", i, rows, tc.stepLog[i])
				}
			}
			if diff := cmp.Diff(tc.steps, steps); diff != "" {
				t.Errorf("step results (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.outputs, fake.outputs); diff != "" {
				t.Errorf("job outputs (-want +got):\n%s", diff)
			}
			for _, want := range tc.inLog {
				if !strings.Contains(log, want) {
					t.Errorf("the log lacks %q:\n%s", want, log)
				}
			}
			for _, secret := range []string{"hunter2-secret", "AAAAsecretlineBBBB", "job-token-value"} {
				if strings.Contains(log, secret) {
					t.Errorf("a secret reached the log:\n%s", log)
				}
			}
			if got := r.TaskLog(7); got != log {
				t.Errorf("the runner's copy of the log differs from what Gitea got:\n%s", cmp.Diff(log, got))
			}
		})
	}
}

// taskContext is the context Gitea 1.23 sends with a task (the fields
// the runner reads).
func taskContext(t *testing.T) *structpb.Struct {
	t.Helper()
	ctx, err := structpb.NewStruct(map[string]any{
		"event": map[string]any{
			"action":     "opened",
			"repository": map[string]any{"full_name": "acme/app", "default_branch": "main"},
		},
		"event_name": "pull_request", "actor": "dev", "repository": "acme/app", "repository_owner": "acme",
		"sha": "0123456789abcdef0123456789abcdef01234567", "ref": "refs/pull/1/head", "ref_name": "1/head", "ref_type": "",
		"head_ref": "feature", "base_ref": "main", "token": "job-token-value", "run_id": "3", "run_number": "1", "run_attempt": "1",
		"job": "4", "server_url": "http://127.0.0.1:3000/", "api_url": "http://127.0.0.1:3000/api/v1", "gitea_runtime_token": "runtime-token-value",
	})
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}
