package actrunner_test

import (
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner/gitea/giteatest"
	"github.com/nova-platform/nova/runner/gitea/giteatest/actrunner"
)

const factsWorkflowPath = ".gitea/workflows/x.yml"

// factsWorkflow runs on every event whose handling the tests record, and
// prints which copy of itself ran (DEFINITION: main on the default
// branch, head on the pull request's branch), whether the repository's
// secret reached it, and the ref and sha Gitea gave the run. Its last
// step fails when a comment asks for it.
const factsWorkflow = `name: facts
on:
  push:
  pull_request:
  pull_request_target:
  pull_request_review:
  pull_request_review_comment:
  issue_comment:
jobs:
  probe:
    runs-on: ubuntu-latest
    steps:
      - name: report
        env:
          SECRET: ${{ secrets.FACTS_SECRET }}
          VAR: ${{ vars.FACTS_VAR }}
          TOKEN: ${{ github.token }}
          REF: ${{ github.ref }}
          SHA: ${{ github.sha }}
          REPO_URL: ${{ github.server_url }}/${{ github.repository }}.git
        run: |
          echo "fact definition=DEFINITION"
          echo "fact ref=$REF"
          echo "fact sha=$SHA"
          if [ -n "$SECRET" ]; then echo "fact secret=present"; else echo "fact secret=absent"; fi
          echo "fact var=$VAR"
          echo "the secret is $SECRET"
          git -c "http.extraHeader=Authorization: token $TOKEN" ls-remote "$REPO_URL" refs/heads/main | grep -q . && echo "fact token=reads"
      # Said in a step of its own: act loses a failing command's last
      # output (see TestExecute).
      - name: say it fails
        if: github.event_name == 'issue_comment' && contains(github.event.comment.body, 'please fail')
        run: echo "failing as the comment asks"
      - name: fail on request
        if: github.event_name == 'issue_comment' && contains(github.event.comment.body, 'please fail')
        run: exit 1
`

// typedWorkflowPath is a second workflow with the review trigger Nova's
// scaffold uses, restricted to submitted reviews.
const typedWorkflowPath = ".gitea/workflows/y.yml"

const typedWorkflow = `name: typed
on:
  pull_request_review:
    types: [submitted]
jobs:
  probe:
    runs-on: ubuntu-latest
    steps:
      - run: |
          echo "fact definition=typed"
          echo "fact ref=${{ github.ref }}"
          echo "fact sha=${{ github.sha }}"
          echo "fact secret=${{ secrets.FACTS_SECRET != '' && 'present' || 'absent' }}"
`

const factsSecret = "s3cret-value-of-the-facts-repo"

func workflowCopy(definition string) string {
	return strings.ReplaceAll(factsWorkflow, "DEFINITION", definition)
}

// fact is what one run showed: the trigger, which copy of the workflow
// ran, the ref and sha it ran for (as <main>, <head> or a literal), whether
// the secret reached it, and the status Gitea gave it.
type fact struct {
	Event, Definition, Ref, SHA, Secret, Status string
}

var factLine = regexp.MustCompile(`(?m)^fact (\w+)=(.*)$`)

// factsRepo is acme/facts on a real Gitea with the facts workflow on main,
// a secret and a variable, and a runner taking its jobs.
type factsRepo struct {
	srv      *giteatest.Server
	run      *actrunner.Runner
	dev, rev giteatest.User
	main     string // main's head
}

func newFactsRepo(t *testing.T) *factsRepo {
	srv := giteatest.Start(t)
	f := &factsRepo{srv: srv, run: actrunner.Start(t, srv)}
	srv.CreateOrg(t, "acme")
	f.dev, f.rev = srv.CreateUser(t, "dev"), srv.CreateUser(t, "rev")
	srv.CreateTeam(t, "acme", "writers", "write", f.dev.Name, f.rev.Name)
	srv.CreateRepo(t, "acme", "facts")
	srv.API(t, srv.AdminToken, http.MethodPut, "/repos/acme/facts/actions/secrets/FACTS_SECRET", map[string]string{"data": factsSecret}, nil)
	srv.API(t, srv.AdminToken, http.MethodPost, "/repos/acme/facts/actions/variables/FACTS_VAR", map[string]string{"value": "var-value"}, nil)
	f.main = srv.CommitFiles(t, "acme", "facts", "main", "main", map[string]string{factsWorkflowPath: workflowCopy("main"), typedWorkflowPath: typedWorkflow}, srv.Admin())
	return f
}

// observe waits until Gitea lists n finished tasks in all and returns the
// facts of those after the first skip, read from the logs Gitea stored.
func (f *factsRepo) observe(t *testing.T, what string, skip, n int, head string) ([]fact, []actrunner.Task) {
	t.Helper()
	tasks := f.run.Await(t, "acme", "facts", what, func(tasks []actrunner.Task) bool {
		return len(tasks) >= n && actrunner.AllDone(tasks)
	})
	if len(tasks) != n {
		t.Fatalf("after %s Gitea lists %d tasks, want %d:\n%s", what, len(tasks), n, describe(tasks))
	}
	var facts []fact
	for _, task := range tasks[skip:] {
		log := f.run.Log(t, "acme", "facts", task)
		if strings.Contains(log, factsSecret) {
			t.Errorf("%s: the secret is in the log Gitea stored:\n%s", task, log)
		}
		got := map[string]string{}
		for _, m := range factLine.FindAllStringSubmatch(log, -1) {
			got[m[1]] = m[2]
		}
		symbolic := func(s string) string {
			switch {
			case s == "":
				return ""
			case s == f.main:
				return "<main>"
			case s == head:
				return "<head>"
			}
			return s
		}
		facts = append(facts, fact{
			Event: task.Event, Definition: got["definition"], Ref: symbolic(got["ref"]), SHA: symbolic(got["sha"]),
			Secret: got["secret"], Status: task.Status,
		})
		if got["definition"] != "" && got["definition"] != "typed" && (got["var"] != "var-value" || got["token"] != "reads") {
			t.Errorf("%s: var=%q token=%q, want the repository's variable and a job token that reads the repository\n%s", task, got["var"], got["token"], log)
		}
	}
	// One event can start several runs, picked in no order that matters.
	slices.SortFunc(facts, func(a, b fact) int { return cmp.Compare(a.Event+" "+a.Definition, b.Event+" "+b.Definition) })
	for _, fc := range facts {
		t.Logf("%s: %+v", what, fc)
	}
	return facts, tasks
}

func describe(tasks []actrunner.Task) string {
	var b strings.Builder
	for _, t := range tasks {
		fmt.Fprintf(&b, "  %s\n", t)
	}
	return b.String()
}

// TestGiteaEventFacts records, on the real Gitea 1.23.8 and through the
// runner, which copy of a workflow Gitea runs for each event and what the
// run receives. Nova's Gitea workflow is shaped by these facts (which
// events may hold keys), so a Gitea upgrade that changes one fails here:
//
//   - push: the pushed commit's copy, with the repository's secrets; so
//     any writer who pushes a branch runs their own workflow with them.
//   - pull_request (same repository): the pull request head's copy, with
//     the repository's secrets; ref refs/pull/N/head, sha the head.
//   - pull_request_target: supported; the base branch's copy, with the
//     secrets; ref refs/heads/<base>, sha the base's head.
//   - pull_request_review: the head's copy (Gitea reads the workflow at the
//     reviewed commit), with the secrets; ref and sha are both that commit.
//     An approving review starts it; a comment review starts it only in a
//     workflow without a types filter (with types: [submitted], as Nova's
//     scaffold has, nothing), plus a pull_request_review_comment run.
//   - issue_comment on a pull request: the default branch's copy, with the
//     secrets; ref refs/heads/<default>, sha its head.
//
// A failing step fails the job and Gitea shows the run as failure; the
// secret's value never reaches the log Gitea keeps.
func TestGiteaEventFacts(t *testing.T) {
	f := newFactsRepo(t)
	s := f.srv

	got, _ := f.observe(t, "the push of the workflow to main", 0, 1, "")
	want := []fact{{Event: "push", Definition: "main", Ref: "refs/heads/main", SHA: "<main>", Secret: "present", Status: "success"}}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("push to main (-want +got):\n%s", diff)
	}

	head := s.CommitFiles(t, "acme", "facts", "feature", "main", map[string]string{factsWorkflowPath: workflowCopy("head"), "change.txt": "a change\n"}, f.dev)
	got, _ = f.observe(t, "the push of a branch that edits the workflow", 1, 2, head)
	want = []fact{{Event: "push", Definition: "head", Ref: "refs/heads/feature", SHA: "<head>", Secret: "present", Status: "success"}}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("push of a writer's branch (-want +got):\n%s", diff)
	}

	pull := s.CreatePullRequest(t, "acme", "facts", "feature", "main", "Change the workflow", f.dev)
	got, _ = f.observe(t, "the runs of the opened pull request", 2, 4, head)
	want = []fact{
		{Event: "pull_request", Definition: "head", Ref: fmt.Sprintf("refs/pull/%d/head", pull), SHA: "<head>", Secret: "present", Status: "success"},
		{Event: "pull_request_target", Definition: "main", Ref: "refs/heads/main", SHA: "<main>", Secret: "present", Status: "success"},
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("pull request opened (-want +got):\n%s", diff)
	}
	// Gitea records a job's commit status after the job's final state, so
	// a finished task can still show a pending status for a moment.
	f.run.Await(t, "acme", "facts", "Gitea's success statuses of both runs on the head", func([]actrunner.Task) bool {
		statuses := f.statuses(t, head)
		return statuses["facts / probe (pull_request)"] == "success" && statuses["facts / probe (pull_request_target)"] == "success"
	})

	s.API(t, f.rev.Token, http.MethodPost, fmt.Sprintf("/repos/acme/facts/pulls/%d/reviews", pull), map[string]string{"event": "APPROVED", "body": "looks right"}, nil)
	got, _ = f.observe(t, "the runs of the approving review", 4, 6, head)
	want = []fact{
		{Event: "pull_request_review", Definition: "head", Ref: "<head>", SHA: "<head>", Secret: "present", Status: "success"},
		{Event: "pull_request_review", Definition: "typed", Ref: "<head>", SHA: "<head>", Secret: "present", Status: "success"},
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("pull request approved (-want +got):\n%s", diff)
	}

	s.API(t, f.rev.Token, http.MethodPost, fmt.Sprintf("/repos/acme/facts/pulls/%d/reviews", pull), map[string]string{"event": "COMMENT", "body": "a thought"}, nil)
	got, _ = f.observe(t, "the runs of the comment review", 6, 8, head)
	want = []fact{
		{Event: "pull_request_review", Definition: "head", Ref: "<head>", SHA: "<head>", Secret: "present", Status: "success"},
		{Event: "pull_request_review_comment", Definition: "head", Ref: "<head>", SHA: "<head>", Secret: "present", Status: "success"},
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("pull request reviewed with a comment (-want +got):\n%s", diff)
	}

	s.API(t, f.rev.Token, http.MethodPost, fmt.Sprintf("/repos/acme/facts/issues/%d/comments", pull), map[string]string{"body": "a remark"}, nil)
	got, _ = f.observe(t, "the run of the comment", 8, 9, head)
	want = []fact{{Event: "issue_comment", Definition: "main", Ref: "refs/heads/main", SHA: "<main>", Secret: "present", Status: "success"}}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("comment on the pull request (-want +got):\n%s", diff)
	}

	s.API(t, f.rev.Token, http.MethodPost, fmt.Sprintf("/repos/acme/facts/issues/%d/comments", pull), map[string]string{"body": "please fail"}, nil)
	got, tasks := f.observe(t, "the run of the comment that asks to fail", 9, 10, head)
	want = []fact{{Event: "issue_comment", Definition: "main", Ref: "refs/heads/main", SHA: "<main>", Secret: "present", Status: "failure"}}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("a failing step (-want +got):\n%s", diff)
	}
	if log := f.run.Log(t, "acme", "facts", tasks[9]); !strings.Contains(log, "failing as the comment asks") || !strings.Contains(log, "the secret is ***") {
		t.Errorf("the failing run's log lacks its step's output or the masked secret:\n%s", log)
	}
}

// statuses are the latest commit status per context on sha, from
// Gitea's combined status: the list of statuses sorts by a creation time
// of one-second resolution, so "newest first" ties within a second.
func (f *factsRepo) statuses(t *testing.T, sha string) map[string]string {
	var combined struct {
		Statuses []struct {
			Status  string `json:"status"`
			Context string `json:"context"`
		} `json:"statuses"`
	}
	f.srv.API(t, f.srv.AdminToken, http.MethodGet, "/repos/acme/facts/commits/"+sha+"/status?limit=50", nil, &combined)
	out := map[string]string{}
	for _, s := range combined.Statuses {
		out[s.Context] = s.Status
	}
	return out
}

// TestGiteaProtectedWorkflowFiles records what a branch protection rule
// on every branch ("*", pushes allowed) with the protected file pattern
// .gitea/workflows/** does on Gitea 1.23.8 to a writer who is not an
// administrator: an edit of a workflow is refused on a branch that exists
// and on a new branch alike (Gitea diffs a new branch from where it
// leaves its base), so neither runs on push; other files still push.
func TestGiteaProtectedWorkflowFiles(t *testing.T) {
	f := newFactsRepo(t)
	s := f.srv
	f.observe(t, "the push of the workflow to main", 0, 1, "")
	s.API(t, s.AdminToken, http.MethodPost, "/repos/acme/facts/branch_protections", map[string]any{
		"rule_name": "*", "enable_push": true, "protected_file_patterns": ".gitea/workflows/**",
	}, nil)

	if _, err := s.TryCommitFiles(t, "acme", "facts", "plain", "main", map[string]string{"notes.txt": "notes\n"}, f.dev); err != nil {
		t.Fatalf("a writer's new branch that leaves the workflows alone was refused: %v", err)
	}
	for _, tc := range []struct {
		name, branch string
	}{
		{"edit on an existing branch", "plain"},
		{"edit on a new branch", "sneaky"},
	} {
		sha, err := s.TryCommitFiles(t, "acme", "facts", tc.branch, "main", map[string]string{factsWorkflowPath: workflowCopy(tc.branch)}, f.dev)
		if err == nil {
			t.Errorf("%s: Gitea accepted the writer's push (%s) of an edited workflow", tc.name, sha)
			continue
		}
		if want := "protected from changing file " + factsWorkflowPath; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: refused with %v, want the message %q", tc.name, err, want)
		}
	}
	// The accepted branch ran main's copy: the pushes of the edits left
	// nothing behind to run.
	got, _ := f.observe(t, "the push of the branch without edits", 1, 2, "")
	if len(got) != 1 || got[0].Definition != "main" || got[0].Ref != "refs/heads/plain" {
		t.Errorf("runs after the pushes: %+v, want only the push of plain, running main's copy", got)
	}
}
