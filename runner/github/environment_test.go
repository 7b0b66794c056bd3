package github

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

func TestEnvironmentApprovals(t *testing.T) {
	prod := runner.ApprovalRequest{
		ContractID:  "c0ffee00-0000-4000-8000-000000000001",
		Environment: runner.Prod,
		PlanDigest:  digest,
		Commit:      headSHA,
		PlannedAt:   planned,
		ForgeRun:    "30433642",
	}
	claim := func(login string, env runner.Environment, d runner.Decision, reason string) runner.ApprovalClaim {
		return runner.ApprovalClaim{
			Approver: login, Environment: env, PlanDigest: digest, Decision: d, Reason: reason,
			Source: runner.SourceGitHubEnvironment, SourceRef: "30433642/" + login + "/" + string(env),
		}
	}
	tests := []struct {
		name string
		edit func(*runner.ApprovalRequest)
		// approvals replaces the fixture when set.
		approvals []map[string]any
		want      []runner.ApprovalClaim
		// wantCalls is whether GitHub is asked at all.
		wantCalls bool
	}{
		{
			name: "approvals and rejections of the requested environment in this run",
			want: []runner.ApprovalClaim{
				claim("alice", runner.Prod, runner.Approve, ""),
				claim("bob", runner.Prod, runner.Reject, "Not during the freeze."),
				// dave approved dr and prod in one review.
				claim("dave", runner.Prod, runner.Approve, ""),
			},
			wantCalls: true,
		},
		{
			name:      "another environment's approvals are not this one's",
			edit:      func(r *runner.ApprovalRequest) { r.Environment = runner.QA },
			want:      []runner.ApprovalClaim{claim("carol", runner.QA, runner.Approve, "")},
			wantCalls: true,
		},
		{
			name: "environment names compare without case, as GitHub's do",
			approvals: []map[string]any{{
				"state": "approved", "comment": "",
				"environments": []any{map[string]any{"id": 1, "name": "Prod"}},
				"user":         map[string]any{"login": "alice", "id": 11, "type": "User"},
			}},
			want:      []runner.ApprovalClaim{claim("alice", runner.Prod, runner.Approve, "")},
			wantCalls: true,
		},
		{
			name: "an approval of another workflow run does not approve this bundle",
			edit: func(r *runner.ApprovalRequest) { r.ForgeRun = "30433641" },
		},
		{
			name: "a bundle whose run is unknown is approved by no run",
			edit: func(r *runner.ApprovalRequest) { r.ForgeRun = "" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			f.handle("GET /repos/octo-org/infra/actions/runs/30433642/approvals", func(w http.ResponseWriter, r *http.Request) {
				if tt.approvals != nil {
					writeJSON(w, 200, tt.approvals)
					return
				}
				writeJSON(w, 200, fixture(t, "approvals.json"))
			})
			req := prod
			if tt.edit != nil {
				tt.edit(&req)
			}
			src := f.client().EnvironmentApprovals()
			got, err := src.Claims(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
			if called := len(f.requests()) > 0; called != tt.wantCalls {
				t.Errorf("asked GitHub: %v; want %v", called, tt.wantCalls)
			}
			if src.Name() != runner.SourceGitHubEnvironment {
				t.Errorf("Name() = %q", src.Name())
			}
		})
	}
}

func TestEnvironmentApprovalsWithoutRun(t *testing.T) {
	f := newFakeGitHub(t)
	_, err := f.client(func(c *Config) { c.RunID = 0 }).EnvironmentApprovals().Claims(t.Context(),
		runner.ApprovalRequest{Environment: runner.Prod, PlanDigest: digest, ForgeRun: "30433642"})
	if runner.ReasonOf(err) != runner.ConfigInvalid {
		t.Fatalf("error = %v; want %s", err, runner.ConfigInvalid)
	}
}
