package github

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

func TestDeployments(t *testing.T) {
	f := newFakeGitHub(t)
	var created map[string]any
	f.handle("POST /repos/octo-org/infra/deployments", func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewDecoder(r.Body).Decode(&created); err != nil {
			t.Error(err)
		}
		writeJSON(w, http.StatusCreated, fixture(t, "deployment.json"))
	})
	var statuses []map[string]any
	f.handle("POST /repos/octo-org/infra/deployments/42/statuses", func(w http.ResponseWriter, r *http.Request) {
		var s map[string]any
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
			t.Error(err)
		}
		statuses = append(statuses, s)
		writeJSON(w, http.StatusCreated, fixture(t, "deployment_status.json"))
	})

	d := f.client().Deployments()
	id, err := d.StartDeployment(t.Context(), headSHA, runner.Prod, "nova apply of plan 3f1c9a0b7e2d")
	if err != nil {
		t.Fatal(err)
	}
	if id != 42 {
		t.Errorf("id = %d; want 42", id)
	}
	// required_contexts must be present and empty: absent, GitHub would
	// require every status check to pass first.
	wantCreated := map[string]any{
		"ref": headSHA, "environment": "prod", "auto_merge": false,
		"required_contexts": []any{}, "description": "nova apply of plan 3f1c9a0b7e2d",
	}
	if diff := cmp.Diff(wantCreated, created); diff != "" {
		t.Errorf("deployment payload (-want +got):\n%s", diff)
	}

	steps := []struct {
		state runner.DeploymentState
		desc  string
	}{
		{runner.DeploymentInProgress, "applying"},
		{runner.DeploymentSuccess, "applied 3 changes"},
		{runner.DeploymentFailure, "terraform apply failed"},
		{runner.DeploymentInactive, "superseded"},
	}
	var want []map[string]any
	for _, s := range steps {
		if err := d.SetDeploymentState(t.Context(), id, s.state, s.desc); err != nil {
			t.Fatal(err)
		}
		want = append(want, map[string]any{"state": string(s.state), "description": s.desc})
	}
	if diff := cmp.Diff(want, statuses); diff != "" {
		t.Errorf("deployment status payloads (-want +got):\n%s", diff)
	}

	if err := d.SetDeploymentState(t.Context(), id, "queued", ""); runner.ReasonOf(err) != runner.InternalError {
		t.Errorf("unknown state: error = %v; want %s", err, runner.InternalError)
	}
}
