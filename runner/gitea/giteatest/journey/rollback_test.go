package journey_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// TestJourneyRollback is a rollback (docs/rollback.md) through Gitea
// 1.23.8's own workflow_dispatch, which only its web UI offers (the
// Actions page's "Run workflow" form; giteatest.Dispatch posts it):
//
//  1. the operator scaffolds acme/app with sre-lead's approver key under
//     keys:; hello reaches dr as in TestJourney (without its refusals),
//     and the pull request is merged: change A runs everywhere;
//  2. a second pull request (change B) applies in dev, qa and prod;
//  3. the operator dispatches the scaffold's rollback workflow for prod to
//     change A: Gitea runs it, nova plans A against what prod runs and
//     waits for prod's approval;
//  4. sre-lead approves that plan with `nova approve --env prod` on their
//     machine, signed with their registered key;
//  5. the operator dispatches it again: prod applies A, and the evidence
//     says prod runs A again, superseding B;
//
// and the evidence verifies.
func TestJourneyRollback(t *testing.T) {
	j := startJourney(t)
	// Deferred, not a cleanup: the forge is read with the test's context,
	// which ends before cleanups run.
	defer j.finish()
	// sre-lead's approver key, made on their machine: nova approve makes
	// it on first use where XDG_CONFIG_HOME/nova/approvers/<login> is.
	config := t.TempDir()
	keyDir := filepath.Join(config, "nova", "approvers", j.sre2.Name)
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := signing.LocalSigner(keyDir); err != nil {
		t.Fatal(err)
	}
	j.approverKeys = map[string]string{j.sre2.Name: readFile(t, signing.LocalSigningPublicKey(keyDir))}

	j.scaffold()
	j.reachDR(false)
	j.srv.API(t, j.ops.Token, http.MethodPost, fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", org, app, j.pull), map[string]string{"Do": "merge"}, nil)
	changeA := j.authorizedChange("prod", 0)

	j.step("the second pull request opened", "pull_request_target", func() {
		j.pullRequest("farewell", "Greet everyone", "audience: Nova and friends", "audience: everyone")
	})
	j.step("qa-lead's approving review of the second pull request", "pull_request_review", func() { j.review(j.qa, "qa checked it") })
	prodDigest := j.approveCommand("prod")
	updated := j.step("sre-oncall's /nova approve prod of the second pull request", "issue_comment", func() { j.comment(j.sre, "/nova approve prod "+prodDigest) })
	wantExits(t, "the second pull request's prod approval", updated, "dev:0 qa:0 prod:0 dr:3")
	changeB := j.authorizedChange("prod", 1)
	if changeA == changeB {
		t.Fatalf("both pull requests deployed change %s to prod", changeA)
	}

	rollback := func() {
		j.srv.Dispatch(t, org, app, "nova-"+app+"-rollback.yml", "main", map[string]string{"environment": "prod", "change": changeA}, j.ops)
	}
	waits := j.step("the operator's rollback of prod to change A", "workflow_dispatch", rollback)
	if log := j.runner.Log(t, org, app, waits.task); !strings.Contains(log, "nova rollback prod: exit 3") {
		t.Errorf("the rollback's first run does not wait for prod's approval:\n%s", tail(log, 40))
	}

	clone := filepath.Join(t.TempDir(), app)
	j.git("", "clone", "-q", j.srv.URL+"/"+org+"/"+app+".git", clone)
	env := map[string]string{
		"XDG_CONFIG_HOME":    config,
		"NOVA_EVIDENCE_REPO": j.srv.URL + "/" + org + "/evidence.git", "NOVA_EVIDENCE_TOKEN": j.bot.Token,
		"NOVA_SIGNING_KEY": j.eventKey, "NOVA_COMMIT_KEY": j.commitKey,
	}
	if out, err := j.novaCmd(clone, env, "approve", "--env", "prod", "--as", j.sre2.Name); err != nil {
		t.Fatalf("sre-lead's nova approve --env prod of the rollback: %v\n%s", err, out)
	}

	applied := j.step("the operator's rollback of prod to change A, approved", "workflow_dispatch", rollback)
	if log := j.runner.Log(t, org, app, applied.task); !strings.Contains(log, "nova rollback prod: exit 0") {
		t.Errorf("the approved rollback's run does not apply it:\n%s", tail(log, 40))
	}
	if got := j.authorizedChange("prod", 2); got != changeA {
		t.Errorf("prod's last authorization is of change %s, want the rollback to %s", got, changeA)
	}
	auths := j.authorizations("prod")
	if last := auths[len(auths)-1]; last.Rollback == nil || last.Rollback.Target != changeA || last.Rollback.Supersedes != changeB {
		t.Errorf("prod's rollback authorization says %+v, want the rollback to %s superseding %s", last.Rollback, changeA, changeB)
	}
	if done := j.applied("prod"); len(done) != 3 {
		t.Errorf("prod completed %d applies, want 3 (A, B, the rollback to A)", len(done))
	}
	j.verifyEvidence()
}

// authorizations are the nova.apply.authorized events' data in env,
// oldest first.
func (j *journey) authorizations(env string) []runner.Authorization {
	var out []runner.Authorization
	for _, e := range j.recorded(runner.EventApplyAuthorized) {
		if e.Environment != env {
			continue
		}
		var a runner.Authorization
		if err := runner.DecodeEventData(e, &a); err != nil {
			j.t.Fatalf("%s event: %v", runner.EventApplyAuthorized, err)
		}
		out = append(out, a)
	}
	return out
}

// authorizedChange is the change of env's i-th authorization.
func (j *journey) authorizedChange(env string, i int) string {
	j.t.Helper()
	auths := j.authorizations(env)
	if len(auths) <= i || auths[i].Change == "" {
		j.t.Fatalf("%s has %d authorizations, and no change in the %d-th: %+v", env, len(auths), i+1, auths)
	}
	return auths[i].Change
}
