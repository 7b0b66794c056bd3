package main

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// TestReadEventPullRequest reads the pull request of each event a GitHub
// workflow of Nova's runs on, as GitHub shapes their payloads.
func TestReadEventPullRequest(t *testing.T) {
	const head, base = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	tests := []struct {
		name, payload string
		want          ForgeConfig
		wantErr       bool
	}{
		{name: "pull_request_target", payload: `{"action": "synchronize", "number": 7, "pull_request": {"number": 7, "head": {"sha": "` + head + `"}, "base": {"sha": "` + base + `"}}}`,
			want: ForgeConfig{PullRequest: 7, HeadSHA: head, BaseSHA: base}},
		{name: "pull_request_target merged", payload: `{"action": "closed", "number": 7, "pull_request": {"number": 7, "merged": true, "merge_commit_sha": "3333333333333333333333333333333333333333", "head": {"sha": "` + head + `"}, "base": {"sha": "` + base + `"}}}`,
			want: ForgeConfig{PullRequest: 7, HeadSHA: head, BaseSHA: base, MergedSHA: "3333333333333333333333333333333333333333"}},
		// An open pull request's merge_commit_sha is the forge's test merge.
		{name: "pull_request_target open", payload: `{"action": "synchronize", "number": 7, "pull_request": {"number": 7, "merge_commit_sha": "3333333333333333333333333333333333333333", "head": {"sha": "` + head + `"}, "base": {"sha": "` + base + `"}}}`,
			want: ForgeConfig{PullRequest: 7, HeadSHA: head, BaseSHA: base}},
		{name: "issue_comment", payload: `{"action": "created", "issue": {"number": 7, "pull_request": {"url": "x"}}, "comment": {"id": 9, "body": "/nova approve qa x", "user": {"login": "qa-lead"}}}`,
			want: ForgeConfig{PullRequest: 7, Comment: &EventComment{Action: "created", ID: 9, Poster: "qa-lead", Body: "/nova approve qa x"}}},
		// No pull request; the comment is kept for `nova break-glass
		// comment` (a request's issue), never as a plan's approval source.
		{name: "issue_comment on an issue", payload: `{"action": "created", "issue": {"number": 7}, "comment": {"id": 9, "body": "/nova approve qa x"}}`,
			want: ForgeConfig{Issue: 7, Comment: &EventComment{Action: "created", ID: 9, Body: "/nova approve qa x"}}},
		// Who dispatched a run is the event's sender.
		{name: "workflow_dispatch", payload: `{"inputs": {"environment": "prod", "requester": "mallory"}, "sender": {"login": "oncall"}}`,
			want: ForgeConfig{Sender: "oncall"}},
		{name: "workflow_run of a review", payload: `{"action": "completed", "workflow_run": {"event": "pull_request_review", "head_sha": "` + head + `", "pull_requests": [{"number": 7, "head": {"sha": "` + head + `"}, "base": {"sha": "` + base + `"}}]}}`,
			want: ForgeConfig{PullRequest: 7, HeadSHA: head, BaseSHA: base}},
		// A fork's pull requests are not listed.
		{name: "workflow_run of a fork", payload: `{"action": "completed", "workflow_run": {"head_sha": "` + head + `", "pull_requests": []}}`},
		// A merge queue's entry names its pull request by its branch alone.
		{name: "merge_group", payload: `{"action": "checks_requested", "merge_group": {"head_sha": "` + head + `", "head_ref": "refs/heads/gh-readonly-queue/main/pr-42-` + base + `", "base_sha": "` + base + `", "base_ref": "refs/heads/main"}}`,
			want: ForgeConfig{PullRequest: 42, HeadSHA: head}},
		{name: "merge_group of another branch", payload: `{"action": "checks_requested", "merge_group": {"head_sha": "` + head + `", "head_ref": "refs/heads/feature/pr-42-` + base + `"}}`, wantErr: true},
		{name: "workflow_run of two pull requests", payload: `{"action": "completed", "workflow_run": {"head_sha": "` + head + `", "pull_requests": [{"number": 7}, {"number": 8}]}}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "event.json")
			writeFile(t, path, tt.payload)
			var fc ForgeConfig
			err := fc.readEvent(path)
			if tt.wantErr {
				if runner.ReasonOf(err) != runner.ConfigInvalid {
					t.Fatalf("error %v, want %s", err, runner.ConfigInvalid)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, fc); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestEventCommit: a workflow GitHub starts from the default branch's
// copy gets the default branch's head as GITHUB_SHA, which is not the
// change; the change is the pull request's head, which must be what is
// checked out.
func TestEventCommit(t *testing.T) {
	const head, main, other = "1111111111111111111111111111111111111111", "3333333333333333333333333333333333333333", "4444444444444444444444444444444444444444"
	tests := []struct {
		event, eventHead, checkedOut string
		want                         string
		wantErr                      bool
		// merged runs --merged, of a pull request merged as mergedAs.
		merged   bool
		mergedAs string
	}{
		{event: "pull_request_target", eventHead: head, checkedOut: main, merged: true, mergedAs: main, want: main},
		{event: "pull_request_target", eventHead: head, checkedOut: head, merged: true, mergedAs: main, wantErr: true},
		{event: "pull_request_target", eventHead: head, checkedOut: main, merged: true, wantErr: true},
		{event: "pull_request", eventHead: head, checkedOut: other, want: main},
		{event: "push", checkedOut: main, want: main},
		{event: "pull_request_target", eventHead: head, checkedOut: head, want: ""},
		{event: "workflow_run", eventHead: head, checkedOut: head, want: ""},
		{event: "issue_comment", checkedOut: head, want: ""},
		// A pull_request_target workflow that checks out what
		// actions/checkout does by default: the default branch.
		{event: "pull_request_target", eventHead: head, checkedOut: main, wantErr: true},
		{event: "workflow_run", eventHead: head, checkedOut: other, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.event+" "+tt.checkedOut[:1], func(t *testing.T) {
			cfg := Config{Dir: "/w", Merged: tt.merged, ForgeAPI: ForgeConfig{EventName: tt.event, HeadSHA: tt.eventHead, PullRequest: 7, MergedSHA: tt.mergedAs}}
			got, err := cfg.eventCommit(main, tt.checkedOut)
			if tt.wantErr {
				if runner.ReasonOf(err) != runner.CommitMismatch {
					t.Fatalf("error %v, want %s", err, runner.CommitMismatch)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("eventCommit = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
