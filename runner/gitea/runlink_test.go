package gitea

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner/gitea/giteatest"
)

// These facts decide how Nova links a workflow run on Gitea (action's
// runURL): the web UI addresses a run by its index among its repository's
// runs, which Gitea's runner hands a job as github.run_number, while
// github.run_id (GITHUB_RUN_ID) counts the runs of the whole instance.

// connectCall makes one unary call to Gitea's runner service in the
// connect protocol's JSON form (what act_runner speaks as protobuf).
func connectCall(ctx context.Context, s *giteatest.Server, method string, header map[string]string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/api/actions/runner.v1.RunnerService/"+method, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", method, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// taskContext is the github context of the next task Gitea hands a runner
// of the instance, waiting for one to be there.
func taskContext(t *testing.T, s *giteatest.Server, auth map[string]string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var fetched struct {
			Task *struct {
				Context map[string]any `json:"context"`
			} `json:"task"`
		}
		if err := connectCall(ctx, s, "FetchTask", auth, map[string]any{"tasksVersion": 0}, &fetched); err != nil {
			t.Fatalf("fetching a task: %v", err)
		}
		if fetched.Task != nil {
			return fetched.Task.Context
		}
		// Gitea creates the run as it handles the event; the runner asks
		// again, as act_runner does.
		select {
		case <-ctx.Done():
			t.Fatal("no task within a minute")
		case <-tick.C:
		}
	}
}

func TestRunLinksOnGitea(t *testing.T) {
	s := giteatest.Start(t)
	ctx := t.Context()
	author := s.Admin()
	s.CreateOrg(t, org)
	workflow := map[string]string{".gitea/workflows/ci.yml": "on: pull_request\njobs:\n  check:\n    runs-on: ubuntu-latest\n    steps:\n      - run: \"true\"\n"}

	var reg struct {
		Token string `json:"token"`
	}
	s.API(t, s.AdminToken, http.MethodGet, "/admin/runners/registration-token", nil, &reg)
	var registered struct {
		Runner struct {
			UUID  string `json:"uuid"`
			Token string `json:"token"`
		} `json:"runner"`
	}
	if err := connectCall(ctx, s, "Register", nil, map[string]any{"name": "facts", "token": reg.Token, "labels": []string{"ubuntu-latest"}}, &registered); err != nil {
		t.Fatal(err)
	}
	auth := map[string]string{"x-runner-uuid": registered.Runner.UUID, "x-runner-token": registered.Runner.Token}

	// Two repositories' first runs: the second repository's has index 1
	// and an instance-wide id past the first's.
	var contexts []map[string]any
	for _, name := range []string{"first", "second"} {
		s.CreateRepo(t, org, name)
		s.CommitFiles(t, org, name, "change", "main", workflow, author)
		s.CreatePullRequest(t, org, name, "change", "main", "Change", author)
		contexts = append(contexts, taskContext(t, s, auth))
	}
	second := contexts[1]
	if second["repository"] != org+"/second" {
		t.Fatalf("the second task is of %v", second["repository"])
	}
	if second["run_number"] != "1" || second["run_id"] == "1" || second["run_id"] == "" {
		t.Fatalf("the second repository's first run: run_number %v, run_id %v; want 1 and the instance-wide id", second["run_number"], second["run_id"])
	}
	status := func(path string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	byNumber := fmt.Sprintf("/%s/second/actions/runs/%s", org, second["run_number"])
	byID := fmt.Sprintf("/%s/second/actions/runs/%s", org, second["run_id"])
	if got := status(byNumber); got != http.StatusOK {
		t.Errorf("GET %s (github.run_number) = %d, want 200", byNumber, got)
	}
	if got := status(byID); got != http.StatusNotFound {
		t.Errorf("GET %s (github.run_id) = %d, want 404: no run of this repository has that index", byID, got)
	}
}
