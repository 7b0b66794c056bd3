package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
)

// TestEventCommentKeepsRejections: a rejection deleted or edited away
// before any run lists the comments is still imported from the event that
// told of the deletion or the edit; an approval is never taken from an
// edit or a deletion.
func TestEventCommentKeepsRejections(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	planned := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	created := planned.Add(time.Minute)
	req := runner.ApprovalRequest{ContractID: "c", Environment: runner.Prod, PlanDigest: digest, Commit: "c0ffee", PlannedAt: planned}
	tests := []struct {
		name    string
		payload string
		want    []runner.Decision
	}{
		{"a rejection, created", event("created", "/nova reject prod not today", "", created, created), []runner.Decision{runner.Reject}},
		{"a rejection, deleted", event("deleted", "/nova reject prod not today", "", created, created), []runner.Decision{runner.Reject}},
		{"a rejection, edited into a remark", event("edited", "Looking at this now", "/nova reject prod not today", created, created.Add(time.Minute)), []runner.Decision{runner.Reject}},
		{"a remark, edited into a rejection", event("edited", "/nova reject prod on second thought", "LGTM", created, created.Add(time.Minute)), []runner.Decision{runner.Reject}},
		{"an approval, created", event("created", "/nova approve prod "+digest, "", created, created), []runner.Decision{runner.Approve}},
		{"a remark, edited into an approval", event("edited", "/nova approve prod "+digest, "Looking at this now", created, created.Add(time.Minute)), nil},
		{"an approval, deleted", event("deleted", "/nova approve prod "+digest, "", created, created), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "event.json")
			if err := os.WriteFile(path, []byte(tt.payload), 0o600); err != nil {
				t.Fatal(err)
			}
			var fc ForgeConfig
			if err := fc.readEvent(path); err != nil {
				t.Fatal(err)
			}
			if fc.Comment == nil || fc.PullRequest != 7 {
				t.Fatalf("event read as %+v", fc)
			}
			claims, err := eventSource(fc, runner.SourceGitHubComment)[0].Claims(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			var got []runner.Decision
			for _, c := range claims {
				if c.Problem != "" {
					t.Errorf("claim %+v with a problem", c)
				}
				if c.Approver != "sre-oncall" || c.SourceRef != "1340" || c.Source != runner.SourceGitHubComment {
					t.Errorf("claim %+v", c)
				}
				got = append(got, c.Decision)
			}
			if strings.Join(decisions(got), ",") != strings.Join(decisions(tt.want), ",") {
				t.Errorf("decisions %v, want %v", got, tt.want)
			}
		})
	}
}

func decisions(ds []runner.Decision) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d)
	}
	return out
}

// event is an issue_comment payload as GitHub documents it (the fields
// Nova reads, with their neighbours).
func event(action, body, from string, created, updated time.Time) string {
	changes := ""
	if action == "edited" {
		changes = `"changes": {"body": {"from": ` + quote(from) + `}},`
	}
	return `{
  "action": ` + quote(action) + `,` + changes + `
  "issue": {"number": 7, "title": "Bigger cache", "pull_request": {"url": "https://api.github.com/repos/octo-org/infra/pulls/7"}},
  "comment": {
    "id": 1340,
    "html_url": "https://github.com/octo-org/infra/pull/7#issuecomment-1340",
    "body": ` + quote(body) + `,
    "user": {"login": "sre-oncall", "id": 2, "type": "User"},
    "created_at": "` + created.Format(time.RFC3339) + `",
    "updated_at": "` + updated.Format(time.RFC3339) + `",
    "author_association": "MEMBER"
  },
  "repository": {"full_name": "octo-org/infra", "default_branch": "main"},
  "sender": {"login": "mallory", "id": 3, "type": "User"}
}`
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
