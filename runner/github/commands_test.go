package github

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		body   string
		want   command
		wantOK bool
	}{
		{body: "/nova approve prod 3f1c9a0b7e2d", want: command{decision: runner.Approve, env: "prod", prefix: "3f1c9a0b7e2d"}, wantOK: true},
		{body: "\r\n  /nova approve qa 3f1c9a0b7e2d4c5f  \r\nthanks!", want: command{decision: runner.Approve, env: "qa", prefix: "3f1c9a0b7e2d4c5f"}, wantOK: true},
		{body: "/nova approve prod " + digest, want: command{decision: runner.Approve, env: "prod", prefix: digest}, wantOK: true},
		{body: "/nova reject prod the bucket must not be public", want: command{decision: runner.Reject, env: "prod", reason: "the bucket must not be public"}, wantOK: true},
		{body: "/nova reject prod too wide\r\nsee the plan, line 3", want: command{decision: runner.Reject, env: "prod", reason: "too wide\nsee the plan, line 3"}, wantOK: true},
		{body: "/nova reject prod", want: command{decision: runner.Reject, env: "prod"}, wantOK: true},
		{body: "/nova approve prod 3f1c9a0b7e2"},         // 11 hex digits
		{body: "/nova approve prod 3F1C9A0B7E2D"},        // not lowercase
		{body: "/nova approve prod 3f1c9a0b7e2z"},        // not hex
		{body: "/nova approve prod"},                     // no digest
		{body: "/nova approve prod 3f1c9a0b7e2d please"}, // trailing words
		{body: "/nova approve 3f1c9a0b7e2d"},             // no environment
		{body: "/nova lgtm prod 3f1c9a0b7e2d"},           // unknown verb
		{body: "/Nova approve prod 3f1c9a0b7e2d"},        // not the command
		{body: "/novaapprove prod 3f1c9a0b7e2d"},         // not the command
		{body: "> /nova approve prod 3f1c9a0b7e2d"},      // a quote
		{body: "LGTM\n/nova approve prod 3f1c9a0b7e2d"},  // not the first line
		{body: "please /nova approve prod 3f1c9a0b7e2d"}, // not at the start
		{body: "`/nova approve prod 3f1c9a0b7e2d`"},      // code, not a command
		{body: ""},
		{body: "\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			got, ok := parseCommand(tt.body)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v; want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(command{})); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
		})
	}
}

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
		// created replaces the documented comment's created_at when set.
		created string
		want    []runner.ApprovalClaim
	}{
		{name: "an approval naming 12 digits of the digest", body: "/nova approve prod " + digest[:12], want: []runner.ApprovalClaim{approve}},
		{name: "an approval naming the whole digest", body: "/nova approve prod " + digest, want: []runner.ApprovalClaim{approve}},
		{name: "a prefix of another plan's digest is ignored", body: "/nova approve prod 0123456789ab"},
		{name: "a prefix shorter than 12 digits is ignored", body: "/nova approve prod " + digest[:11]},
		{name: "an approval of another environment is ignored", body: "/nova approve qa " + digest[:12]},
		{name: "a comment before the plan was recorded is ignored", body: "/nova approve prod " + digest[:12], created: "2024-05-02T09:29:00Z"},
		{name: "a malformed command is ignored", body: "/nova approve prod"},
		{name: "an ordinary comment is ignored", body: "Me too"},
		{
			name: "a rejection applies to the current plan",
			body: "/nova reject prod not during the freeze",
			want: []runner.ApprovalClaim{{
				Approver: "alice", Environment: runner.Prod, PlanDigest: digest, Decision: runner.Reject,
				Reason: "not during the freeze", Source: runner.SourceGitHubComment, SourceRef: "1", At: at,
			}},
		},
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
				})})
			})
			got, err := f.client().Comments().Claims(t.Context(), commentRequest())
			if err != nil {
				t.Fatal(err)
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
