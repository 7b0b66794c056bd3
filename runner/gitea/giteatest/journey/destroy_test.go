package journey_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// TestJourneyDestroy is a contract's decommission (docs/destroy.md) as an
// operator lives it on a real Gitea 1.23.8, every run started by Gitea
// from a real event:
//
//  1. hello reaches dr as in TestJourney (without its refusals), and the
//     pull request is merged;
//  2. dev-author opens a pull request deleting the contract: the scaffold's
//     workflow plans dr's destroy, from main's copy of the contract, and
//     waits;
//  3. sre-oncall approves dr's destroy: one approver of the two dr's
//     destroy needs (DESTROY_NEEDS_MORE_APPROVALS), still waiting;
//  4. qa-lead, a member of sre who approved the contract in qa, approves:
//     refused (separation of duties), still waiting;
//  5. sre-lead approves: dr is destroyed, prod's destroy waits;
//  6. sre-oncall and sre-lead approve prod's destroy: prod is destroyed
//     after the second, qa's waits;
//  7. qa-lead approves by review: qa is destroyed, then dev (autonomous);
//
// and at the end the head's four statuses are success, the evidence
// records the four destroys in the order dr, prod, qa, dev with each
// state removed, nova's comments say so, and the evidence verifies.
func TestJourneyDestroy(t *testing.T) {
	j := startJourney(t)
	// Deferred, not a cleanup: the forge is read with the test's context,
	// which ends before cleanups run.
	defer j.finish()

	j.scaffold()
	j.reachDR(false)
	// The scaffold's workflow runs on no closed pull request: the merge
	// starts nothing.
	j.srv.API(t, j.ops.Token, http.MethodPost, fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", org, app, j.pull), map[string]string{"Do": "merge"}, nil)

	opened := j.step("the pull request deleting the contract opened", "pull_request_target", j.deleteContract)
	wantExits(t, "the destroy pull request's first run", opened, "dr:3")
	j.wantStatuses("after the destroy pull request opened", map[string]string{"dr": "pending"})
	drDigest := j.approveCommand("dr")

	one := j.step("sre-oncall's /nova approve dr (destroy)", "issue_comment", func() { j.comment(j.sre, "/nova approve dr "+drDigest) })
	wantExits(t, "the run after one dr approval", one, "dr:3")
	j.wantLog(one, "one approver of dr's destroy", string(runner.DestroyNeedsMoreApprovals))

	sod := j.step("qa-lead's /nova approve dr (destroy)", "issue_comment", func() { j.comment(j.qa, "/nova approve dr "+drDigest) })
	wantExits(t, "the run after qa-lead approved dr's destroy", sod, "dr:3")
	j.wantLog(sod, "qa-lead's approval of dr's destroy", "may not approve its destroy in dr (separation of duties)")
	if c := j.novaComment("dr"); !strings.Contains(strings.ReplaceAll(c, `\`, ""), j.qa.Name+" approved this contract in qa") {
		t.Errorf("nova's dr comment does not name qa-lead, whose approval separation of duties refused:\n%s", c)
	}
	if refused := j.recorded(runner.EventApprovalRefused); len(refused) != 1 || refused[0].Environment != "dr" {
		t.Errorf("the evidence records %d %s events (%v), want qa-lead's in dr", len(refused), runner.EventApprovalRefused, refused)
	}

	dr := j.step("sre-lead's /nova approve dr (destroy)", "issue_comment", func() { j.comment(j.sre2, "/nova approve dr "+drDigest) })
	wantExits(t, "the run after dr's second approver", dr, "dr:0 prod:3")
	j.wantStatuses("after dr's destroy", map[string]string{"dr": "success", "prod": "pending"})
	prodDigest := j.approveCommand("prod")

	j.step("sre-oncall's /nova approve prod (destroy)", "issue_comment", func() { j.comment(j.sre, "/nova approve prod "+prodDigest) })
	prod := j.step("sre-lead's /nova approve prod (destroy)", "issue_comment", func() { j.comment(j.sre2, "/nova approve prod "+prodDigest) })
	wantExits(t, "the run after prod's second approver", prod, "dr:0 prod:0 qa:3")
	j.wantStatuses("after prod's destroy", map[string]string{"dr": "success", "prod": "success", "qa": "pending"})

	last := j.step("qa-lead's approving review (destroy)", "pull_request_review", func() { j.review(j.qa, "qa is done with it") })
	wantExits(t, "the run after qa's approval", last, "dr:0 prod:0 qa:0 dev:0")
	j.wantStatuses("after every destroy", map[string]string{"dr": "success", "prod": "success", "qa": "success", "dev": "success"})

	var order []string
	for _, e := range j.recorded(runner.EventDestroyCompleted) {
		var d runner.DestroyedRecord
		if err := runner.DecodeEventData(e, &d); err != nil {
			t.Fatalf("%s event: %v", runner.EventDestroyCompleted, err)
		}
		order = append(order, e.Environment)
		if !d.StateRemoved {
			t.Errorf("%s's destroy kept its state: %s", e.Environment, d.State)
		}
	}
	if want := []string{"dr", "prod", "qa", "dev"}; !slices.Equal(order, want) {
		t.Errorf("the evidence records destroys in %v, want %v", order, want)
	}
	// Every run destroys again where it can, so an environment destroyed
	// by an earlier run is commented on again: the comment must still
	// say it was destroyed.
	for _, env := range environments {
		said := regexp.MustCompile(`was destroyed in ` + env + `|destroyed with plan`)
		if c := j.novaComment(env); !said.MatchString(strings.ReplaceAll(c, `\`, "")) {
			t.Errorf("nova's last %s comment on the pull request does not say %s was destroyed:\n%s", env, env, c)
		}
	}
	j.verifyEvidence()
}

// deleteContract is dev-author's pull request deleting the contract, from
// main.
func (j *journey) deleteContract() {
	t, s := j.t, j.srv
	j.head = j.signedCommit(j.dev, "decommission", "main", nil, ".nova/contract.yml")
	j.pull = s.CreatePullRequest(t, org, app, "decommission", "main", "Decommission hello", j.dev)
	j.wantVerified(j.head)
}

// wantExits fails the test when a run's nova exits are not want.
func wantExits(t *testing.T, what string, got job, want string) {
	t.Helper()
	if got.exits != want {
		t.Errorf("%s: nova exits %q, want %q", what, got.exits, want)
	}
}

// wantLog fails the test when the run's log does not say code.
func (j *journey) wantLog(run job, what, code string) {
	j.t.Helper()
	if log := j.runner.Log(j.t, org, app, run.task); !strings.Contains(log, code) {
		j.t.Errorf("the run after %s does not say %s:\n%s", what, code, tail(log, 40))
	}
}

// recorded are the events of kind in acme/evidence's main, in the order
// they were recorded.
func (j *journey) recorded(kind string) []runner.Event {
	t := j.t
	j.events() // fetches the evidence repo
	var out []runner.Event
	for _, p := range strings.Split(j.git(j.evidence, "ls-tree", "-r", "--name-only", "main", "--", "contracts"), "\n") {
		if !strings.HasSuffix(p, "-"+kind+".json") {
			continue
		}
		var e runner.Event
		if err := json.Unmarshal([]byte(j.git(j.evidence, "show", "main:"+p)), &e); err != nil {
			t.Fatalf("evidence event %s: %v", p, err)
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b runner.Event) int { return int(a.Seq - b.Seq) })
	return out
}
