package main

import (
	"encoding/json"
	"github.com/nova-platform/nova/runner/forgehttp"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nova-platform/nova/runner"
)

// ForgeConfig is how nova reaches the forge it runs in, read once from the
// variables its runner sets and the event that started the workflow.
type ForgeConfig struct {
	// APIURL is GitHub's REST API (GITHUB_API_URL); ServerURL the forge's
	// root (GITHUB_SERVER_URL, which Gitea's runner sets to Gitea's).
	APIURL, ServerURL string
	// Token reads pull requests, reviews, comments and teams and writes
	// comments, statuses and deployments; without one nova works with the
	// forge's variables only.
	Token       string
	Owner, Repo string
	// PullRequest is the pull request the event is about (0: none).
	PullRequest int64
	// RunID is the workflow run (GITHUB_RUN_ID): unique across GitHub,
	// and across the whole instance on Gitea. RunNumber (GITHUB_RUN_NUMBER)
	// is, on Gitea, the run's index among its repository's runs, which is
	// what Gitea's web UI addresses a run by (runURL).
	RunID, RunNumber int64
	// EventName is the event that started the workflow.
	EventName string
	// BaseSHA and HeadSHA are the pull request's base and head commits.
	BaseSHA, HeadSHA string
	// MergedSHA is the commit that merged the pull request into its base,
	// when the event is about a merged one: what `--merged` runs.
	MergedSHA string
	// Comment is the comment an issue_comment event delivered, as it was
	// when the event was sent; Issue is its issue's number when that is
	// not a pull request (a break-glass request's issue).
	Comment *EventComment
	Issue   int64
	// Sender is who caused the event, as the forge says (the payload's
	// sender): who dispatched a workflow_dispatch run, never an input.
	Sender string
	// Retry is how the API clients wait and retry (Env.ForgeRetry).
	Retry forgehttp.Policy
}

// EventComment is the comment of an issue_comment event. The forge sends
// the event when the comment is created, edited or deleted, with the text
// as it stood: a rejection deleted or edited away before any run read it
// through the API is still seen here.
type EventComment struct {
	// Action is created, edited or deleted.
	Action string
	ID     int64
	Poster string
	Body   string
	// Previous is an edit's text before it.
	Previous         string
	Created, Updated time.Time
}

// forgeTokenVariables are where a forge token may come from, first found
// wins: nova's own (which the action's token inputs stand for), then what
// the runners provide.
var forgeTokenVariables = []string{"NOVA_FORGE_TOKEN", "GITEA_TOKEN", "GITHUB_TOKEN"}

func readForgeConfig(forge Forge, getenv func(string) string) (ForgeConfig, error) {
	if forge == NoForge {
		return ForgeConfig{}, nil
	}
	fc := ForgeConfig{
		APIURL: getenv("GITHUB_API_URL"), ServerURL: strings.TrimRight(getenv("GITHUB_SERVER_URL"), "/"),
		EventName: getenv("GITHUB_EVENT_NAME"),
	}
	for _, v := range forgeTokenVariables {
		if fc.Token = getenv(v); fc.Token != "" {
			break
		}
	}
	if owner, repo, ok := strings.Cut(getenv("GITHUB_REPOSITORY"), "/"); ok {
		fc.Owner, fc.Repo = owner, repo
	}
	if id := getenv("GITHUB_RUN_ID"); id != "" {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n < 0 {
			return fc, runner.Errorf(runner.ConfigInvalid, "GITHUB_RUN_ID %q is not a run id", id)
		}
		fc.RunID = n
	}
	if num := getenv("GITHUB_RUN_NUMBER"); num != "" {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n < 0 {
			return fc, runner.Errorf(runner.ConfigInvalid, "GITHUB_RUN_NUMBER %q is not a run number", num)
		}
		fc.RunNumber = n
	}
	if path := getenv("GITHUB_EVENT_PATH"); path != "" {
		if err := fc.readEvent(path); err != nil {
			return fc, err
		}
	}
	return fc, nil
}

// forgeEvent is the part of a workflow's event payload nova reads: the
// pull request of a pull_request, pull_request_target,
// pull_request_review, issue_comment or workflow_run event, on either
// forge.
type forgeEvent struct {
	PullRequest *struct {
		Number int64 `json:"number"`
		Base   struct {
			SHA string `json:"sha"`
		} `json:"base"`
		Head struct {
			SHA string `json:"sha"`
		} `json:"head"`
		Merged         bool   `json:"merged"`
		MergeCommitSHA string `json:"merge_commit_sha"`
	} `json:"pull_request"`
	Issue *struct {
		Number      int64           `json:"number"`
		PullRequest json.RawMessage `json:"pull_request"`
	} `json:"issue"`
	Action string `json:"action"`
	Sender *struct {
		Login string `json:"login"`
	} `json:"sender"`
	Comment *struct {
		ID   int64  `json:"id"`
		Body string `json:"body"`
		User struct {
			Login string `json:"login"`
		} `json:"user"`
		CreatedAt time.Time `json:"created_at"`
		UpdatedAt time.Time `json:"updated_at"`
	} `json:"comment"`
	Changes struct {
		Body struct {
			From string `json:"from"`
		} `json:"body"`
	} `json:"changes"`
	// WorkflowRun is the run whose completion started this one; GitHub
	// lists the pull requests of its head branch in this repository.
	WorkflowRun *struct {
		HeadSHA      string `json:"head_sha"`
		PullRequests []struct {
			Number int64 `json:"number"`
			Base   struct {
				SHA string `json:"sha"`
			} `json:"base"`
		} `json:"pull_requests"`
	} `json:"workflow_run"`
	// MergeGroup is a merge queue's entry (GitHub): the commit the queue
	// would merge, on a branch named after the pull request.
	MergeGroup *struct {
		HeadSHA string `json:"head_sha"`
		HeadRef string `json:"head_ref"`
	} `json:"merge_group"`
}

// queueBranch is the branch GitHub's merge queue makes for an entry:
// gh-readonly-queue/<base branch>/pr-<number>-<base sha>.
var queueBranch = regexp.MustCompile(`^(?:refs/heads/)?gh-readonly-queue/.+/pr-([0-9]+)-[0-9a-f]{7,64}$`)

// maxEventBytes bounds the event payload nova reads.
const maxEventBytes = 25 << 20

func (fc *ForgeConfig) readEvent(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return runner.Errorf(runner.ConfigInvalid, "reading the workflow's event (GITHUB_EVENT_PATH): %w", err)
	}
	if len(data) > maxEventBytes {
		return runner.Errorf(runner.ConfigInvalid, "the workflow's event is larger than %d bytes", maxEventBytes)
	}
	var ev forgeEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return runner.Errorf(runner.ConfigInvalid, "reading the workflow's event (GITHUB_EVENT_PATH): %w", err)
	}
	if ev.Sender != nil {
		fc.Sender = ev.Sender.Login
	}
	switch {
	case ev.PullRequest != nil:
		fc.PullRequest, fc.BaseSHA, fc.HeadSHA = ev.PullRequest.Number, ev.PullRequest.Base.SHA, ev.PullRequest.Head.SHA
		if ev.PullRequest.Merged {
			// An open pull request's merge_commit_sha is the forge's test
			// merge, never what the default branch holds.
			fc.MergedSHA = ev.PullRequest.MergeCommitSHA
		}
	case ev.Issue != nil && len(ev.Issue.PullRequest) > 0 && string(ev.Issue.PullRequest) != "null":
		// A comment on a pull request: the event names the number only.
		fc.PullRequest = ev.Issue.Number
		if c := ev.Comment; c != nil {
			fc.Comment = &EventComment{Action: ev.Action, ID: c.ID, Poster: c.User.Login, Body: c.Body, Previous: ev.Changes.Body.From,
				Created: c.CreatedAt, Updated: c.UpdatedAt}
		}
	case ev.Issue != nil:
		// A comment on an issue: a /nova break-glass command on the
		// issue Nova opened for a request.
		fc.Issue = ev.Issue.Number
		if c := ev.Comment; c != nil {
			fc.Comment = &EventComment{Action: ev.Action, ID: c.ID, Poster: c.User.Login, Body: c.Body, Previous: ev.Changes.Body.From,
				Created: c.CreatedAt, Updated: c.UpdatedAt}
		}
	case ev.MergeGroup != nil:
		// The queue's commit is the run's (GITHUB_SHA); the pull request
		// is named only by the queue's branch.
		m := queueBranch.FindStringSubmatch(ev.MergeGroup.HeadRef)
		if m == nil {
			return runner.Errorf(runner.ConfigInvalid, "the merge_group event's head_ref %q is not a merge queue branch (gh-readonly-queue/<branch>/pr-<number>-<sha>), so which pull request it merges is unknown", ev.MergeGroup.HeadRef)
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || n <= 0 {
			return runner.Errorf(runner.ConfigInvalid, "the merge_group event's head_ref %q names no pull request number", ev.MergeGroup.HeadRef)
		}
		fc.PullRequest, fc.HeadSHA = n, ev.MergeGroup.HeadSHA
	case ev.WorkflowRun != nil:
		// A run that relays a pull request event (a review) to a workflow
		// of the default branch: the pull request is its run's, at the
		// head that run was for.
		switch prs := ev.WorkflowRun.PullRequests; len(prs) {
		case 0:
		case 1:
			fc.PullRequest, fc.BaseSHA, fc.HeadSHA = prs[0].Number, prs[0].Base.SHA, ev.WorkflowRun.HeadSHA
		default:
			return runner.Errorf(runner.ConfigInvalid, "the workflow_run event names %d pull requests of its head branch, so which one this run is about is unknown", len(prs))
		}
	}
	return nil
}

// defaultBranchEvents are the events whose runs GitHub and Gitea start
// from the default branch's copy of the workflow, with GITHUB_SHA the
// default branch's head: the change they are about is the pull request
// the workflow checked out, never GITHUB_SHA.
var defaultBranchEvents = []string{"pull_request_target", "issue_comment", "workflow_run"}
