package github

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

func TestSetStatus(t *testing.T) {
	long := strings.Repeat("é", 200)
	tests := []struct {
		name   string
		status runner.CommitStatus
		want   map[string]any
	}{
		{
			name:   "every field",
			status: runner.CommitStatus{Context: "nova/prod", State: runner.StateFailure, Description: "policy: 2 critical", TargetURL: "https://github.com/octo-org/infra/actions/runs/30433642"},
			want:   map[string]any{"context": "nova/prod", "state": "failure", "description": "policy: 2 critical", "target_url": "https://github.com/octo-org/infra/actions/runs/30433642"},
		},
		{
			name:   "a long description is cut to 140 characters",
			status: runner.CommitStatus{Context: "nova/prod", State: runner.StatePending, Description: long},
			want:   map[string]any{"context": "nova/prod", "state": "pending", "description": strings.Repeat("é", 139) + "…"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			var got map[string]any
			f.handle("POST /repos/octo-org/infra/statuses/"+headSHA, func(w http.ResponseWriter, r *http.Request) {
				if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
					t.Error(err)
				}
				writeJSON(w, http.StatusCreated, fixture(t, "status.json"))
			})
			if err := f.client().Statuses().SetStatus(t.Context(), headSHA, tt.status); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetStatusRefusesUnknownStates(t *testing.T) {
	f := newFakeGitHub(t)
	err := f.client().Statuses().SetStatus(t.Context(), headSHA, runner.CommitStatus{Context: "nova/prod", State: "skipped"})
	if runner.ReasonOf(err) != runner.InternalError {
		t.Fatalf("error = %v; want %s", err, runner.InternalError)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests; want none", n)
	}
}
