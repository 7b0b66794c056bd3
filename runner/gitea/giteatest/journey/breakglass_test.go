package journey_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// TestJourneyBreakGlass is break-glass (docs/break-glass.md) from the
// scaffold's Gitea workflow on a real Gitea 1.23.8, every run started by
// Gitea from a real event:
//
//  1. the operator scaffolds acme/app with a breakglass group of
//     sre-oncall and sre-lead; dev-author's pull request applies in dev
//     and qa, and prod waits for its approval;
//  2. the operator dispatches nova-app-breakglass.yml for prod with a
//     reason: Nova records the request and opens an issue for it;
//  3. the operator comments `/nova break-glass approve <id>` there:
//     refused, the requester may not approve (BREAKGLASS_SELF_APPROVAL),
//     and the issue says so;
//  4. sre-oncall and then sre-lead approve by comment: the second grants;
//  5. the operator re-runs the pull request's last run, as the request's
//     issue says: prod applies without a prod approval, under the grant;
//
// and the evidence records the use, `nova evidence query --open-reviews`
// lists it, and the evidence verifies.
func TestJourneyBreakGlass(t *testing.T) {
	j := startJourney(t)
	// Deferred, not a cleanup: the forge is read with the test's context,
	// which ends before cleanups run.
	defer j.finish()
	j.breakglass = []string{j.sre.Name, j.sre2.Name}

	j.scaffold()
	reviewed, _ := j.reachProd()
	wantExits(t, "qa-lead's review", reviewed, "dev:0 qa:0 prod:3")

	const reason = "checkout is down"
	j.step("the operator's break-glass request for prod", "workflow_dispatch", func() {
		j.srv.Dispatch(t, org, app, "nova-"+app+"-breakglass.yml", "main", map[string]string{"environment": "prod", "reason": reason}, j.ops)
	})
	issue, request := j.breakGlassIssue()
	// Names are Markdown-escaped (nova\-admin); what a reader sees has no
	// backslashes.
	if body := strings.ReplaceAll(issue.Body, `\`, ""); !strings.Contains(body, reason) || !strings.Contains(body, "@"+j.ops.Name) {
		t.Errorf("the request's issue does not say who asked and why:\n%s", body)
	}
	approve := "/nova break-glass approve " + request

	self := j.stepEnding("the operator's own break-glass approval", "issue_comment", "failure", func() { j.commentOn(issue.Number, j.ops, approve) })
	j.wantLog(self, "the requester's approval", string(runner.BreakGlassSelfApproval))
	if body := strings.ReplaceAll(j.issue(issue.Number).Body, `\`, ""); !strings.Contains(body, string(runner.BreakGlassSelfApproval)) {
		t.Errorf("the request's issue does not say the requester's approval was refused:\n%s", body)
	}
	if refused := j.recorded(runner.EventBreakGlassRefused); len(refused) != 1 {
		t.Errorf("the evidence records %d %s events, want the requester's", len(refused), runner.EventBreakGlassRefused)
	}

	j.step("sre-oncall's break-glass approval", "issue_comment", func() { j.commentOn(issue.Number, j.sre, approve) })
	if granted := j.recorded(runner.EventBreakGlassGranted); len(granted) != 0 {
		t.Errorf("one approval granted break-glass: %v", granted)
	}
	j.step("sre-lead's break-glass approval", "issue_comment", func() { j.commentOn(issue.Number, j.sre2, approve) })
	if granted := j.recorded(runner.EventBreakGlassGranted); len(granted) != 1 {
		t.Fatalf("the evidence records %d %s events after two members approved, want 1", len(granted), runner.EventBreakGlassGranted)
	}
	if body := j.issue(issue.Number).Body; !strings.Contains(body, "**Granted**") {
		t.Errorf("the request's issue does not say it is granted:\n%s", body)
	}

	used := j.step("the operator's re-run of qa-lead's review run", "pull_request_review", func() {
		j.srv.Rerun(t, org, app, reviewed.task.RunNumber, j.ops)
	})
	wantExits(t, "the re-run under the grant", used, "dev:0 qa:0 prod:0 dr:3")
	j.wantStatuses("after the re-run under the grant", map[string]string{"dev": "success", "qa": "success", "prod": "success", "dr": "pending"})
	if approvals := j.recorded(runner.EventApprovalRecorded); len(approvals) != 1 || approvals[0].Environment != "qa" {
		t.Errorf("the evidence records approvals %v, want only qa-lead's in qa", approvals)
	}
	uses := j.recorded(runner.EventBreakGlassUsed)
	if len(uses) != 1 || uses[0].Environment != "prod" {
		t.Fatalf("the evidence records %s events %v, want one in prod", runner.EventBreakGlassUsed, uses)
	}
	auths := j.authorizations("prod")
	if len(auths) != 1 || auths[0].BreakGlass == "" {
		t.Errorf("prod's authorizations are %+v, want one under the grant", auths)
	}
	if done := j.applied("prod"); len(done) != 1 {
		t.Errorf("prod completed %d applies, want 1", len(done))
	}

	env := map[string]string{"NOVA_EVIDENCE_TOKEN": j.bot.Token, "NOVA_EVIDENCE_PUBLIC_KEY": j.eventPub, "NOVA_COMMIT_PUBLIC_KEY": j.commitPub}
	out, err := j.novaCmd(t.TempDir(), env, "evidence", "query", j.srv.URL+"/"+org+"/evidence.git", "--open-reviews", "--output", "jsonl")
	if err != nil {
		t.Fatalf("nova evidence query --open-reviews: %v\n%s", err, out)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.Contains(lines[0], runner.EventBreakGlassUsed) || !strings.Contains(lines[0], auths[0].BreakGlass) {
		t.Errorf("nova evidence query --open-reviews lists, want the one use of grant %s:\n%s", auths[0].BreakGlass, out)
	}
	j.verifyEvidence()
}

type apiIssue struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
}

var requestID = regexp.MustCompile("Request id: `([0-9a-f-]+)`")

// breakGlassIssue is the one issue Nova opened for a break-glass request,
// and the request's id it names; the journey cannot go on without them.
func (j *journey) breakGlassIssue() (apiIssue, string) {
	t := j.t
	t.Helper()
	var list []apiIssue
	j.srv.API(t, j.srv.AdminToken, http.MethodGet, fmt.Sprintf("/repos/%s/%s/issues?type=issues&state=open", org, app), nil, &list)
	if len(list) != 1 {
		t.Fatalf("%s/%s has %d open issues, want the break-glass request's: %+v", org, app, len(list), list)
	}
	m := requestID.FindStringSubmatch(list[0].Body)
	if m == nil || !strings.Contains(list[0].Body, "<!-- nova:breakglass-request:") {
		t.Fatalf("issue #%d is not a break-glass request's naming its id:\n%s", list[0].Number, list[0].Body)
	}
	return list[0], m[1]
}

// issue is issue number n as Gitea shows it now.
func (j *journey) issue(n int) apiIssue {
	var is apiIssue
	j.srv.API(j.t, j.srv.AdminToken, http.MethodGet, fmt.Sprintf("/repos/%s/%s/issues/%d", org, app, n), nil, &is)
	return is
}
