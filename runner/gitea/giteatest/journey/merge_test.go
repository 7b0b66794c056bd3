package journey_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/gitea/giteatest"
	"github.com/nova-platform/nova/stages/apply"
)

// TestJourneyApplyOnMerge is apply after merge (docs/apply-after-merge.md)
// as an operator lives it on a real Gitea 1.23.8, every run started by
// Gitea from a real event:
//
//  1. the operator scaffolds acme/app with `nova init --forge gitea
//     --apply-on merge`;
//  2. dev-author opens a pull request: dev applies, qa waits;
//  3. qa-lead approves by `/nova approve qa` (a comment rather than a
//     review: Gitea keeps a review's time in whole seconds, and a review
//     submitted in the second its plan was recorded does not count
//     (runner/gitea's reviewClaim), which a test this fast hits about one
//     run in four): qa's plan is approved and held for the
//     merge, and nothing is applied in qa;
//  4. the pull request is merged through Gitea's merge endpoint: Gitea
//     starts the merge workflow from the pull request's closed event, and
//     qa applies the approved digest on the merged commit;
//  5. a second pull request is approved in qa, then its author pushes a
//     contract change: merged, its qa run is held with MERGE_PLAN_STALE and
//     nothing is applied in qa;
//  6. qa-lead approves the merged commit's plan with the `/nova approve`
//     comment nova suggests on the merged pull request (the pull
//     request's workflow it starts plans nothing there), and the operator
//     re-runs the merge workflow: qa applies that plan;
//
// and the evidence verifies at the end.
func TestJourneyApplyOnMerge(t *testing.T) {
	// Gitea signs its merge commits, as an operator whose prod wants
	// signed commits has it do: an unsigned merge commit's provenance
	// keeps prod below its confidence threshold after every merge.
	j := startJourney(t, giteatest.SignMerges())
	defer j.finish()

	j.scaffold("--apply-on", "merge")

	j.step("the pull request opened", "pull_request_target", j.openPullRequest)
	j.wantStatuses("after the pull request opened", map[string]string{"dev": "success", "qa": "pending"})
	qaDigest := j.approveCommand("qa")

	held := j.step("qa-lead's /nova approve qa", "issue_comment", func() { j.comment(j.qa, "/nova approve qa "+qaDigest) })
	if want := "dev:0 qa:0 prod:0 dr:0"; held.exits != want {
		t.Errorf("the pull request's run after qa's approval: nova exits %q, want %q (qa held for the merge, prod and dr planned after it)", held.exits, want)
	}
	if log := j.runner.Log(t, org, app, held.task); !strings.Contains(log, "applied after the merge") {
		t.Errorf("the pull request's qa run does not say its approved plan is applied after the merge:\n%s", tail(log, 40))
	}
	if applied := j.applied("qa"); len(applied) != 0 {
		t.Fatalf("qa applied on the pull request (%v): with --apply-on merge nothing guarded applies before the merge", applied)
	}

	merged := j.step("the pull request merged", "pull_request_target", j.merge)
	if want := "dev:0 qa:0 prod:3"; merged.exits != want {
		t.Errorf("the merge workflow's nova exits %q, want %q (qa applies, prod waits for its approval)", merged.exits, want)
	}
	if applied := j.applied("qa"); len(applied) != 1 || !strings.HasPrefix(applied[0], qaDigest) {
		t.Errorf("qa applied %v after the merge, want only the approved plan %s", applied, qaDigest)
	}

	// The contract changed after the approval: approved, then its author
	// pushes another edit, and the pull request is merged as it is.
	j.step("the second pull request opened", "pull_request_target", func() {
		j.pullRequest("farewell", "Greet everyone", "audience: Nova and friends", "audience: everyone")
	})
	j.wantStatuses("after the second pull request opened", map[string]string{"dev": "success", "qa": "pending"})
	secondDigest := j.approveCommand("qa")
	approved := j.step("qa-lead's /nova approve qa of the second pull request", "issue_comment", func() { j.comment(j.qa, "/nova approve qa "+secondDigest) })
	if want := "dev:0 qa:0 prod:0 dr:0"; approved.exits != want {
		t.Errorf("the second pull request's run after qa's approval: nova exits %q, want %q", approved.exits, want)
	}
	j.step("the second pull request changed after qa's approval", "pull_request_target", func() {
		changed := strings.Replace(j.contract("farewell"), "audience: everyone", "audience: everyone at all", 1)
		j.head = j.signedCommit(j.dev, "farewell", "farewell", map[string]string{".nova/contract.yml": changed})
	})
	stale := j.step("the second pull request merged", "pull_request_target", j.merge)
	if want := "dev:0 qa:3"; stale.exits != want {
		t.Errorf("the merge workflow's nova exits %q, want %q (qa held: the merge is not what was approved)", stale.exits, want)
	}
	if log := j.runner.Log(t, org, app, stale.task); !strings.Contains(log, string(runner.MergePlanStale)) || !strings.Contains(log, "contract") {
		t.Errorf("the merge workflow's run does not say %s naming the contract:\n%s", runner.MergePlanStale, tail(log, 60))
	}
	if applied := j.applied("qa"); len(applied) != 1 {
		t.Errorf("qa applied %v, want only the first pull request's plan: the stale merge applies nothing", applied)
	}

	// qa-lead approves the merged commit's plan, which nova's comment on
	// the merged pull request names, by commenting what it suggests on
	// the merged pull request. The comment starts the pull request's
	// workflow, which plans nothing on a merged pull request: planning its
	// head again put that plan on show, and the merged run's plan was then
	// new again when re-run, newer than the comment, which did not count.
	// The operator re-runs the merge workflow: it applies exactly that
	// plan.
	staleDigest := j.approveCommand("qa")
	if staleDigest == secondDigest {
		t.Errorf("the stale merge asks for the approval of the plan already approved on the pull request, %s", secondDigest)
	}
	commented := j.step("qa-lead's /nova approve qa on the merged pull request", "issue_comment", func() { j.comment(j.qa, "/nova approve qa "+staleDigest) })
	if want := "dev:0 qa:0 prod:0 dr:0"; commented.exits != want {
		t.Errorf("the pull request's workflow on the merged pull request: nova exits %q, want %q", commented.exits, want)
	}
	if log := j.runner.Log(t, org, app, commented.task); !strings.Contains(log, "is merged: the merge workflow plans and applies its merged commit") {
		t.Errorf("the pull request's workflow on the merged pull request does not say it plans nothing:\n%s", tail(log, 60))
	}
	rerun := j.step("the merge workflow re-run", "pull_request_target", func() { j.srv.Rerun(t, org, app, stale.task.RunNumber, j.ops) })
	if want := "dev:0 qa:0 prod:3"; rerun.exits != want {
		t.Errorf("the merge workflow's re-run: nova exits %q, want %q (qa applies the newly approved plan, prod waits)", rerun.exits, want)
	}
	if applied := j.applied("qa"); len(applied) != 2 || !strings.HasPrefix(applied[1], staleDigest) {
		t.Errorf("qa applied %v, want the first merge's plan and then the newly approved %s", applied, staleDigest)
	}

	j.verifyEvidence()
}

// merge merges the pull request through Gitea's merge endpoint, as the
// operator, and makes the merged commit the one whose statuses are read.
func (j *journey) merge() {
	t, s := j.t, j.srv
	s.API(t, j.ops.Token, http.MethodPost, fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", org, app, j.pull), map[string]string{"Do": "merge"}, nil)
	var pr struct {
		Merged         bool   `json:"merged"`
		MergeCommitSHA string `json:"merge_commit_sha"`
	}
	s.API(t, s.AdminToken, http.MethodGet, fmt.Sprintf("/repos/%s/%s/pulls/%d", org, app, j.pull), nil, &pr)
	if !pr.Merged || pr.MergeCommitSHA == "" {
		t.Fatalf("Gitea shows pull request #%d merged=%v, merge commit %q", j.pull, pr.Merged, pr.MergeCommitSHA)
	}
	j.head = pr.MergeCommitSHA
	j.wantVerified(j.head)
}

// applied are the plan digests nova.apply.completed recorded in env, oldest
// first.
func (j *journey) applied(env string) []string {
	t := j.t
	j.events() // fetches the evidence repo
	var out []string
	for _, p := range strings.Split(j.git(j.evidence, "ls-tree", "-r", "--name-only", "main", "--", "contracts"), "\n") {
		if !strings.HasSuffix(p, "-"+runner.EventApplyCompleted+".json") {
			continue
		}
		var e runner.Event
		if err := json.Unmarshal([]byte(j.git(j.evidence, "show", "main:"+p)), &e); err != nil {
			t.Fatalf("evidence event %s: %v", p, err)
		}
		if e.Environment != env {
			continue
		}
		var data apply.Data
		if err := runner.DecodeEventData(e, &data); err != nil || data.Digest == "" {
			t.Fatalf("evidence event %s names no plan digest (%v): %s", p, err, e.Data)
		}
		out = append(out, data.Digest)
	}
	return out
}
