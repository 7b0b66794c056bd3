package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/audit/report/reporttest"
)

// TestLifecycleThroughTheGate takes examples/hello through its whole life
// with real Terraform, on one evidence chain: change A is created dev →
// qa → prod → dr, change B updates all four, prod is rolled back to A
// (and B, planned there again, waits for a new approval), and the
// contract is destroyed dr → prod → qa → dev. Each step goes
// through the gate: qa approved by qa-lead once the change's author is
// refused; prod and dr by sre-oncall once qa-lead is refused (separation
// of duties); the rollback by an sre member other than its requester; the
// prod and dr destroys by two distinct sre members, neither qa-lead, one
// not being enough; a destroy out of order refused, and a destroy's check
// changing nothing. The evidence verifies after every phase, and the
// report and the export tell the whole story.
func TestLifecycleThroughTheGate(t *testing.T) {
	c := newHelloConsumer(t, runner.EngineTerraform)
	repo := newSignedRepo(t, c.dir)
	repo.commit("hello", ".")
	c.extra = []string{"--trusted-keys", repo.Keys}

	verify := func(after string) {
		t.Helper()
		if out := c.decide(ExitPass, "evidence", "verify"); !strings.Contains(out, "result           OK") {
			t.Fatalf("evidence verify after %s:\n%s", after, out)
		}
	}
	// promote takes the contract at HEAD dev → qa → prod → dr and returns
	// its change and the plan prod applied.
	promote := func() (string, string) {
		t.Helper()
		dev := c.step(ExitPass, "", "run")
		change := changeOf(t, dev)
		c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--env", "qa")
		if out := c.decide(ExitFail, "approve", "--env", "qa", "--as", "consumer"); !strings.Contains(out, "consumer wrote this change and may not approve it") {
			t.Errorf("the author's approval in qa:\n%s", out)
		}
		c.decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
		applied := []runView{dev, c.step(ExitPass, "", "apply", "--env", "qa")}
		for _, env := range []string{"prod", "dr"} {
			c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--env", env)
			c.decide(ExitPass, "approve", "--env", env, "--as", "qa-lead")
			sod := c.step(ExitAwaitingApproval, runner.SeparationOfDutiesViolation, "apply", "--env", env)
			if msg := stage(sod, "gate").Findings[0].Message; !strings.Contains(msg, "qa-lead") {
				t.Errorf("%s: the refusal of qa's approver does not name them: %s", env, msg)
			}
			c.decide(ExitPass, "approve", "--env", env, "--as", "sre-oncall")
			applied = append(applied, c.step(ExitPass, "", "apply", "--env", env))
		}
		for _, v := range applied {
			if got := changeOf(t, v); got != change || stage(v, "apply").Verdict != runner.Pass {
				t.Errorf("%s applied change %s (%v), want %s", v.Environment, got, verdicts(v), change)
			}
		}
		return change, applied[2].PlanDigest
	}

	// Created.
	changeA, _ := promote()
	deployedA := deployed(c.helloState("prod"))
	verify("the creation")

	// Updated.
	contract := filepath.Join(c.dir, ".nova", "contract.yml")
	data, err := os.ReadFile(contract)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, contract, strings.Replace(string(data), "audience: Nova", "audience: Lifecycle", 1))
	repo.commit("greet the lifecycle", ".nova/contract.yml")
	changeB, prodPlanB := promote()
	if changeB == changeA {
		t.Fatal("the new audience is the same change")
	}
	if deployed(c.helloState("prod")) == deployedA {
		t.Fatal("prod deploys the same after change B as after A")
	}
	verify("the update")

	// Rolled back in prod to A, asked for by sre-lead.
	c.env["USER"] = "sre-lead"
	wait := c.step(ExitAwaitingApproval, runner.ApprovalRequired, "rollback", "--env", "prod", "--to", changeA[:12])
	if out := c.decide(ExitFail, "approve", "--env", "prod", "--as", "sre-lead"); !strings.Contains(out, "sre-lead asked for this rollback and may not approve it") {
		t.Errorf("the requester's approval:\n%s", out)
	}
	c.decide(ExitPass, "approve", "--env", "prod", "--as", "sre-oncall")
	back := c.step(ExitPass, "", "rollback", "--env", "prod", "--to", changeA[:12])
	c.env["USER"] = "dev-author"
	if back.PlanDigest != wait.PlanDigest {
		t.Errorf("the rollback applied plan %s, not the one approved, %s", back.PlanDigest, wait.PlanDigest)
	}
	if got := deployed(c.helloState("prod")); got != deployedA {
		t.Errorf("prod after the rollback deploys\n%s\nwant A's\n%s", got, deployedA)
	}
	// Planned again, B is byte for byte the plan prod applied before the
	// rollback: its approval from then does not undo the rollback.
	again := c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--env", "prod")
	if again.PlanDigest != prodPlanB || deployed(c.helloState("prod")) != deployedA {
		t.Errorf("B planned again after the rollback: plan %s (B's was %s), prod deploys\n%s", again.PlanDigest, prodPlanB, deployed(c.helloState("prod")))
	}
	verify("the rollback")

	// Destroyed, dr → prod → qa → dev. prod first is out of order: dr
	// still runs B.
	v := c.step(ExitFail, runner.DestroyOrderViolation, "run", "--destroy", "--env", "prod")
	if msg := stage(v, "gate").Findings[0].Message; !strings.Contains(msg, "dr runs change "+changeB[:12]) {
		t.Errorf("the order violation does not name dr and B: %s", msg)
	}
	present := func(env string) {
		t.Helper()
		if _, err := os.Stat(c.helloStatePath(env)); err != nil {
			t.Fatalf("%s's state is gone before its destroy: %v", env, err)
		}
	}
	gone := func(env string) {
		t.Helper()
		if _, err := os.Stat(c.helloStatePath(env)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the state of %s is still there after its destroy (%v)", env, err)
		}
	}
	present("prod")
	runs := map[string]string{"dr": changeB, "prod": changeA, "qa": changeB, "dev": changeB}
	for _, env := range []string{"dr", "prod"} {
		plan := c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--destroy", "--env", env)
		c.decide(ExitPass, "approve", "--env", env, "--as", "qa-lead")
		sod := c.step(ExitAwaitingApproval, runner.SeparationOfDutiesViolation, "apply", "--env", env)
		if msg := stage(sod, "gate").Findings[0].Message; !strings.Contains(msg, "qa-lead approved this contract in qa") {
			t.Errorf("%s: the refusal of qa's approver does not say why: %s", env, msg)
		}
		c.decide(ExitPass, "approve", "--env", env, "--as", "sre-oncall")
		one := c.step(ExitAwaitingApproval, runner.DestroyNeedsMoreApprovals, "apply", "--env", env)
		if msg := stage(one, "gate").Findings[0].Message; !strings.Contains(msg, "needs 2 distinct approvers") {
			t.Errorf("%s: a one-approver destroy: %s", env, msg)
		}
		present(env)
		// sre-lead asked for prod's rollback, which makes them no author
		// of its destroy.
		c.decide(ExitPass, "approve", "--env", env, "--as", "sre-lead")
		before := c.world()
		check := c.step(ExitPass, "", "apply", "--env", env, "--check")
		if after := c.world(); after != before || !check.Check || check.PlanDigest != plan.PlanDigest {
			t.Fatalf("%s: apply --check of the destroy (plan %s, want %s) changed the world:\nbefore:\n%s\nafter:\n%s", env, check.PlanDigest, plan.PlanDigest, before, after)
		}
		present(env)
		done := c.step(ExitPass, "", "apply", "--env", env)
		checkDestroyEvents(t, done, "sre-oncall", "sre-lead")
		if got := destroyedChange(t, done); got != runs[env] {
			t.Errorf("%s's destroy took away change %s, want %s", env, got, runs[env])
		}
		gone(env)
		verify(env + "'s destroy")
	}
	c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--destroy", "--env", "qa")
	c.decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
	qa := c.step(ExitPass, "", "apply", "--env", "qa")
	checkDestroyEvents(t, qa, "qa-lead")
	gone("qa")
	verify("qa's destroy")
	dev := c.step(ExitPass, "", "run", "--destroy")
	checkDestroyEvents(t, dev, "autonomous")
	gone("dev")
	verify("dev's destroy")
	for env, v := range map[string]runView{"qa": qa, "dev": dev} {
		if got := destroyedChange(t, v); got != runs[env] {
			t.Errorf("%s's destroy took away change %s, want %s", env, got, runs[env])
		}
	}

	// The report: every apply in the timeline, the rollback among them,
	// and the four decommissions.
	page := filepath.Join(t.TempDir(), "report.html")
	c.decide(ExitPass, "report", "--out", page)
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := reporttest.Table(html, "Applies in the timeline")
	if err != nil {
		t.Fatal(err)
	}
	// The timeline names each apply's change, never the commit it was
	// planned from: a rollback's is the change it went back to, a
	// destroy's the change it took away.
	a, b := changeA[:12], changeB[:12]
	rolledBack := "applied, rollback to change " + changeA[:12] + " superseding " + changeB[:12]
	sre, two := " by sre-oncall", " by sre-oncall, sre-lead"
	want := map[string][]string{
		"dev":  {a + " applied by autonomous", b + " applied by autonomous", b + " destroy applied by autonomous"},
		"qa":   {a + " applied by qa-lead", b + " applied by qa-lead", b + " destroy applied by qa-lead"},
		"prod": {a + " applied" + sre, b + " applied" + sre, a + " " + rolledBack + sre, a + " destroy applied" + two},
		"dr":   {a + " applied" + sre, b + " applied" + sre, b + " destroy applied" + two},
	}
	got := map[string][]string{}
	for _, row := range rows {
		// Contract, Change, Environment, At, Outcome, Approver, Plan.
		got[row[2]] = append(got[row[2]], row[1]+" "+row[4]+" by "+row[5])
	}
	for env, w := range want {
		if !slices.Equal(got[env], w) {
			t.Errorf("the report's timeline in %s:\n%s\nwant\n%s", env, strings.Join(got[env], "\n"), strings.Join(w, "\n"))
		}
	}
	checkDecommissions(t, html, "sre-oncall, sre-lead")

	// The export: the decommissions, each with the change it took away,
	// and the one apply that rolled back.
	tables := filepath.Join(t.TempDir(), "tables")
	c.decide(ExitPass, "evidence", "export", "--out", tables)
	var decommissioned []string
	for _, row := range readJSONL(t, filepath.Join(tables, "decommissions.jsonl")) {
		env, _ := row["environment"].(string)
		decommissioned = append(decommissioned, env)
		if row["change"] != runs[env] || row["state_removed"] != true {
			t.Errorf("exported decommission %v, want change %s with its state removed", row, runs[env])
		}
	}
	if got := strings.Join(decommissioned, " "); got != "dr prod qa dev" {
		t.Errorf("exported decommissions %q, want dr prod qa dev", got)
	}
	var rollbacks []map[string]any
	for _, row := range readJSONL(t, filepath.Join(tables, "applies.jsonl")) {
		if row["rollback_to"] != "" {
			rollbacks = append(rollbacks, row)
		}
	}
	if len(rollbacks) != 1 || rollbacks[0]["rollback_to"] != changeA || rollbacks[0]["supersedes"] != changeB ||
		rollbacks[0]["environment"] != "prod" || rollbacks[0]["outcome"] != "applied" || rollbacks[0]["approver"] != "sre-oncall" {
		t.Errorf("exported applies that roll back: %v", rollbacks)
	}
}

// destroyedChange is the change a destroy's run took away, from its
// nova.destroy.completed.
func destroyedChange(t *testing.T, v runView) string {
	t.Helper()
	for _, e := range readEvents(t, v.EventsFile) {
		if e.Type == runner.EventDestroyCompleted {
			var d runner.DestroyedRecord
			if err := runner.DecodeEventData(e, &d); err != nil {
				t.Fatal(err)
			}
			return d.Change
		}
	}
	t.Fatalf("%s: no %s", v.Environment, runner.EventDestroyCompleted)
	return ""
}

// deployed is what a state deploys: each resource's address and values,
// and each output, ids aside, since an equal resource may come back
// under a new id.
func deployed(st *tfjson.State) string {
	if st.Values == nil {
		return ""
	}
	ids := map[any]bool{}
	var lines []string
	var walk func(m *tfjson.StateModule)
	walk = func(m *tfjson.StateModule) {
		if m == nil {
			return
		}
		for _, r := range m.Resources {
			values := map[string]any{}
			for k, v := range r.AttributeValues {
				if k == "id" {
					ids[v] = true
					continue
				}
				values[k] = v
			}
			b, _ := json.Marshal(values)
			lines = append(lines, "resource "+r.Address+" "+string(b))
		}
		for _, child := range m.ChildModules {
			walk(child)
		}
	}
	walk(st.Values.RootModule)
	for name, o := range st.Values.Outputs {
		if s, ok := o.Value.(string); ok && ids[s] {
			continue
		}
		b, _ := json.Marshal(o.Value)
		lines = append(lines, "output "+name+" "+string(b))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
