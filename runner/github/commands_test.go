package github

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

func commentRequest() runner.ApprovalRequest {
	return runner.ApprovalRequest{
		ContractID:  "c0ffee00-0000-4000-8000-000000000001",
		Environment: runner.Prod,
		PlanDigest:  digest,
		Commit:      headSHA,
		PlannedAt:   planned,
	}
}

func TestComments(t *testing.T) {
	at := time.Date(2024, 5, 2, 10, 0, 0, 0, time.UTC)
	approve := runner.ApprovalClaim{
		Approver: "alice", Environment: runner.Prod, PlanDigest: digest, Decision: runner.Approve,
		Source: runner.SourceGitHubComment, SourceRef: "1", At: at,
	}
	tests := []struct {
		name string
		body string
		// created and updated replace the documented comment's times
		// when set.
		created, updated string
		want             []runner.ApprovalClaim
		problem          bool
	}{
		{name: "an approval naming 32 digits of the digest", body: "/nova approve prod " + digest[:32], want: []runner.ApprovalClaim{approve}},
		{name: "an approval naming the whole digest", body: "/nova approve prod " + digest, want: []runner.ApprovalClaim{approve}},
		{name: "a prefix of another plan's digest is ignored", body: "/nova approve prod 0123456789abcdef0123456789abcdef"},
		{name: "a prefix of 12 digits is answered, not counted", body: "/nova approve prod " + digest[:12], problem: true},
		{name: "an approval of another environment is ignored", body: "/nova approve qa " + digest},
		{name: "a comment before the plan was recorded is ignored", body: "/nova approve prod " + digest, created: "2024-05-02T09:29:00Z"},
		// The attack: the author edits a reviewer's "Looking at this now"
		// into an approval; GitHub keeps the reviewer's name and
		// created_at, and moves updated_at.
		{name: "an edited comment never approves", body: "/nova approve prod " + digest, updated: "2024-05-02T10:05:00Z", problem: true},
		{name: "an ordinary comment is ignored", body: "Me too"},
		{
			name: "a rejection applies to the current plan",
			body: "/nova reject prod not during the freeze",
			want: []runner.ApprovalClaim{{
				Approver: "alice", Environment: runner.Prod, PlanDigest: digest, Decision: runner.Reject,
				Reason: "not during the freeze", Source: runner.SourceGitHubComment, SourceRef: "1", At: at,
			}},
		},
		{
			name: "an edited rejection still holds the plan", body: "/nova reject Prod not during the freeze", updated: "2024-05-02T10:05:00Z",
			want: []runner.ApprovalClaim{{
				Approver: "alice", Environment: runner.Prod, PlanDigest: digest, Decision: runner.Reject,
				Reason: "not during the freeze", Source: runner.SourceGitHubComment, SourceRef: "1", At: at,
			}},
		},
		{name: "a rejection naming an unknown environment is answered", body: "/nova reject production no", problem: true},
		{name: "a rejection of another environment is ignored", body: "/nova reject qa not during the freeze"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			f.handle("GET /repos/octo-org/infra/issues/7/comments", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, []any{fixtureWith(t, "comment.json", func(c map[string]any) {
					c["body"] = tt.body
					if tt.created != "" {
						c["created_at"] = tt.created
					}
					if tt.updated != "" {
						c["updated_at"] = tt.updated
					}
				})})
			})
			got, err := f.client().Comments().Claims(t.Context(), commentRequest())
			if err != nil {
				t.Fatal(err)
			}
			if tt.problem {
				if len(got) != 1 || got[0].Problem == "" {
					t.Fatalf("claims %+v, want one answered with its problem", got)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCommentsPaginate(t *testing.T) {
	f := newFakeGitHub(t)
	list := f.pages("comments", 3)
	f.handle("GET /repos/octo-org/infra/issues/7/comments", func(w http.ResponseWriter, r *http.Request) {
		if got := r.URL.Query().Get("since"); got != "2024-05-02T09:30:00Z" {
			t.Errorf("since = %q; want the planned time", got)
		}
		list(w, r)
	})
	got, err := f.client().Comments().Claims(t.Context(), commentRequest())
	if err != nil {
		t.Fatal(err)
	}
	// Page 1 holds Nova's own plan comment and an approval made before the
	// plan; page 3 a quoted command, which is not one.
	want := []runner.ApprovalClaim{
		{Approver: "carol", Environment: runner.Prod, PlanDigest: digest, Decision: runner.Approve,
			Source: runner.SourceGitHubComment, SourceRef: "103", At: time.Date(2024, 5, 2, 10, 5, 0, 0, time.UTC)},
		{Approver: "dave", Environment: runner.Prod, PlanDigest: digest, Decision: runner.Reject,
			Reason: "the bucket must not be public", Source: runner.SourceGitHubComment, SourceRef: "104",
			At: time.Date(2024, 5, 2, 10, 10, 0, 0, time.UTC)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"", "2", "3"}, f.pagesRead("/repos/octo-org/infra/issues/7/comments")); diff != "" {
		t.Errorf("pages read (-want +got):\n%s", diff)
	}
}

func TestCommentsWithoutPullRequest(t *testing.T) {
	f := newFakeGitHub(t)
	_, err := f.client(func(c *Config) { c.PullRequest = 0 }).Comments().Claims(t.Context(), commentRequest())
	if runner.ReasonOf(err) != runner.ConfigInvalid {
		t.Fatalf("error = %v; want %s", err, runner.ConfigInvalid)
	}
}
