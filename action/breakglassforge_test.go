package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/terraform/terraformtest"
)

// bgEntry is one way into break-glass: the CLI, the GitHub action's
// inputs, or the commands the Gitea workflow runs. Each world has its own
// evidence.
type bgEntry struct {
	t     *testing.T
	dir   string
	home  string
	clock time.Time
	// forge is "" (the CLI), "github" (the action) or "gitea" (the
	// workflow's commands).
	forge string
	seq   int64
}

func newBGEntry(t *testing.T, forge string) *bgEntry {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), helloContract("world", "dev"))
	writeFile(t, filepath.Join(dir, runner.ApproversFile), testApprovers+"  breakglass:\n    members: [sre-1, sre-2, oncall]\n")
	signedCheckout(t, dir)
	return &bgEntry{t: t, dir: dir, home: t.TempDir(), clock: time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC), forge: forge}
}

// event writes a workflow's event payload and returns its path.
func (w *bgEntry) event(payload map[string]any) string {
	w.t.Helper()
	data, err := json.Marshal(payload)
	if err != nil {
		w.t.Fatal(err)
	}
	path := filepath.Join(w.t.TempDir(), "event.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		w.t.Fatal(err)
	}
	return path
}

// exec runs nova with args (none: the action) and the environment vars.
func (w *bgEntry) exec(wantCode int, args []string, vars map[string]string) string {
	w.t.Helper()
	all := map[string]string{"HOME": w.home, "USER": "runner"}
	for k, v := range vars {
		all[k] = v
	}
	var stdout, stderr bytes.Buffer
	code := exitCode(run(w.t.Context(), Env{Args: args, Getenv: func(k string) string { return all[k] }, Environ: os.Environ(),
		Stdout: &stdout, Stderr: &stderr, Now: func() time.Time { return w.clock }}))
	if code != wantCode {
		w.t.Fatalf("nova %v %v: exit %d, want %d\n%s%s", args, vars, code, wantCode, stdout.String(), stderr.String())
	}
	return stdout.String() + stderr.String()
}

// forgeVars are what a forge's runner sets for a job of event.
func (w *bgEntry) forgeVars(eventName string, payload map[string]any) map[string]string {
	w.seq++
	vars := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": eventName, "GITHUB_EVENT_PATH": w.event(payload),
		"GITHUB_REPOSITORY": "acme/app", "GITHUB_RUN_ID": fmt.Sprint(100 + w.seq), "GITHUB_SERVER_URL": "https://forge.example",
		// What a job's GITHUB_ACTOR says is not who acts: the event is.
		"GITHUB_ACTOR": "someone-else"}
	if w.forge == "gitea" {
		vars["GITEA_ACTIONS"] = "true"
	}
	return vars
}

// request asks for break-glass for prod as who.
func (w *bgEntry) request(who, reason string) string {
	w.t.Helper()
	var out string
	switch w.forge {
	case "":
		out = w.exec(ExitPass, []string{"break-glass", "request", "--env", "prod", "--reason", reason, "--as", who, "--dir", w.dir}, nil)
	case "github":
		vars := w.forgeVars("workflow_dispatch", map[string]any{"inputs": map[string]any{"environment": "prod", "reason": reason}, "sender": map[string]any{"login": who}})
		for k, v := range map[string]string{"INPUT_COMMAND": "break-glass", "INPUT_BREAK-GLASS": "request", "INPUT_ENVIRONMENT": "prod", "INPUT_REASON": reason, "INPUT_DIR": w.dir, "INPUT_CHECK": "false", "INPUT_OUTPUT": "text"} {
			vars[k] = v
		}
		out = w.exec(ExitPass, nil, vars)
	case "gitea":
		vars := w.forgeVars("workflow_dispatch", map[string]any{"inputs": map[string]any{"environment": "prod", "reason": reason}, "sender": map[string]any{"login": who}})
		out = w.exec(ExitPass, []string{"break-glass", "request", "--env", "prod", "--reason", reason, "--from-event", "--dir", w.dir}, vars)
	}
	m := regexp.MustCompile(`request ([0-9a-f-]{36})`).FindStringSubmatch(out)
	if m == nil {
		w.t.Fatalf("no request id in:\n%s", out)
	}
	return m[1]
}

// comment has who comment body on the request's issue (the CLI: run the
// command the comment asks for); edited makes it an edit of a comment.
func (w *bgEntry) comment(wantCode int, who, body string, edited bool) string {
	w.t.Helper()
	if w.forge == "" {
		cmd, ok := runner.ParseBreakGlassCommand(body)
		if !ok {
			w.t.Fatalf("%q is no command", body)
		}
		args := []string{"break-glass", cmd.Action, "--env", "prod", "--as", who, "--dir", w.dir}
		if cmd.Action == runner.BreakGlassApproveAction {
			args = append(args, "--request", cmd.ID)
		} else {
			args = append(args, "--grant", cmd.ID, "--reason", cmd.Reason)
		}
		return w.exec(wantCode, args, nil)
	}
	w.seq++
	created := w.clock.Add(-time.Minute)
	updated, action := created, "created"
	if edited {
		updated, action = w.clock, "edited"
	}
	payload := map[string]any{"action": action, "sender": map[string]any{"login": who},
		"issue":   map[string]any{"number": 7},
		"comment": map[string]any{"id": 900 + w.seq, "body": body, "user": map[string]any{"login": who}, "created_at": created, "updated_at": updated}}
	vars := w.forgeVars("issue_comment", payload)
	if w.forge == "github" {
		for k, v := range map[string]string{"INPUT_COMMAND": "break-glass", "INPUT_BREAK-GLASS": "comment", "INPUT_DIR": w.dir, "INPUT_CHECK": "false", "INPUT_OUTPUT": "text"} {
			vars[k] = v
		}
		return w.exec(wantCode, nil, vars)
	}
	return w.exec(wantCode, []string{"break-glass", "comment", "--dir", w.dir}, vars)
}

// events are the break-glass events recorded, as the fields that must
// not depend on the entry point.
func (w *bgEntry) events() []string {
	w.t.Helper()
	out := w.exec(ExitPass, []string{"evidence", "query", "--type", "nova.breakglass.*", "--output", "jsonl"}, nil)
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			Type        string `json:"type"`
			Environment string `json:"environment"`
			Data        struct {
				Requester string   `json:"requester"`
				Approver  string   `json:"approver"`
				Approvers []string `json:"approvers"`
				Actor     string   `json:"actor"`
				Action    string   `json:"action"`
				Reason    string   `json:"reason"`
				RevokedBy string   `json:"revokedBy"`
				Claim     struct {
					Claim runner.BreakGlassClaim `json:"claim"`
				} `json:"claim"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			w.t.Fatalf("query line %q: %v", line, err)
		}
		d := e.Data
		source := d.Claim.Claim.Source
		want := map[string]string{"": "", "github": runner.SourceGitHubComment, "gitea": runner.SourceGiteaComment}[w.forge]
		if e.Type == runner.EventBreakGlassRequested && w.forge != "" {
			want = map[string]string{"github": runner.SourceGitHubDispatch, "gitea": runner.SourceGiteaDispatch}[w.forge]
		}
		if e.Type != runner.EventBreakGlassGranted && source != want {
			w.t.Errorf("%s: %s's claim says the forge vouches %q, want %q", w.forge, e.Type, source, want)
		}
		got = append(got, fmt.Sprintf("%s %s requester=%s approver=%s approvers=%s actor=%s action=%s reason=%q revokedBy=%s claimActor=%s",
			strings.TrimPrefix(e.Type, "nova.breakglass."), e.Environment, d.Requester, d.Approver, strings.Join(d.Approvers, "+"), d.Actor, d.Action, d.Reason, d.RevokedBy, d.Claim.Claim.Actor))
	}
	return got
}

// TestBreakGlassEntryPointsGiveTheSameEvents drives one break-glass story
// through the CLI, the GitHub action's inputs with its event payloads, and
// the commands the Gitea workflow runs with Gitea's payloads: a request,
// refused comments (the requester's, a non-member's, an edited one), two
// approvals that grant, and a revocation. The events recorded are the
// same, field by field; only the actor's proof differs (a signature on
// the CLI, the forge's word in a job).
func TestBreakGlassEntryPointsGiveTheSameEvents(t *testing.T) {
	stories := map[string][]string{}
	for _, forge := range []string{"", "github", "gitea"} {
		w := newBGEntry(t, forge)
		req := w.request("oncall", "checkout is down")
		if forge != "" {
			// A comment on a pull request is no approval command there,
			// and here: the comment's poster is who acts.
			for _, refused := range []struct {
				who    string
				edited bool
				want   runner.Reason
			}{
				{"oncall", false, runner.BreakGlassSelfApproval},
				{"outsider", false, runner.BreakGlassNotInGroup},
				{"sre-2", true, runner.BreakGlassCommentEdited},
			} {
				if out := w.comment(ExitFail, refused.who, "/nova break-glass approve "+req, refused.edited); !strings.Contains(out, string(refused.want)) {
					t.Errorf("%s: comment by %s (edited %v): want %s in:\n%s", forge, refused.who, refused.edited, refused.want, out)
				}
			}
		} else {
			w.comment(ExitFail, "oncall", "/nova break-glass approve "+req, false)
			w.comment(ExitFail, "outsider", "/nova break-glass approve "+req, false)
		}
		w.comment(ExitPass, "sre-1", "/nova break-glass approve "+req, false)
		if out := w.comment(ExitPass, "sre-2", "/nova break-glass approve "+req, false); !strings.Contains(out, "BREAK-GLASS GRANTED") {
			t.Fatalf("%s: the second approval did not grant:\n%s", forge, out)
		}
		w.comment(ExitPass, "oncall", "/nova break-glass revoke "+req+" checkout is back", false)
		events := w.events()
		if forge != "" {
			// The edited comment's refusal is the forge entry points' own:
			// the CLI has no comment to edit.
			i := slices.IndexFunc(events, func(s string) bool { return strings.Contains(s, string(runner.BreakGlassCommentEdited)) })
			if i < 0 || !strings.Contains(events[i], "actor=sre-2") {
				t.Fatalf("%s: no refusal of the edited comment by sre-2 in:\n%s", forge, strings.Join(events, "\n"))
			}
			events = slices.Delete(events, i, i+1)
		}
		stories[forge] = events
	}
	want := []string{
		`requested prod requester=oncall approver= approvers= actor= action= reason="checkout is down" revokedBy= claimActor=oncall`,
		`refused prod requester= approver= approvers= actor=oncall action=approve reason="BREAKGLASS_SELF_APPROVAL" revokedBy= claimActor=oncall`,
		`refused prod requester= approver= approvers= actor=outsider action=approve reason="BREAKGLASS_NOT_IN_GROUP" revokedBy= claimActor=outsider`,
		`approved prod requester= approver=sre-1 approvers= actor= action= reason="" revokedBy= claimActor=sre-1`,
		`approved prod requester= approver=sre-2 approvers= actor= action= reason="" revokedBy= claimActor=sre-2`,
		`granted prod requester=oncall approver= approvers=sre-1+sre-2 actor= action= reason="checkout is down" revokedBy= claimActor=`,
		`revoked prod requester= approver= approvers= actor= action= reason="checkout is back" revokedBy=oncall claimActor=oncall`,
	}
	for forge, got := range stories {
		if !slices.Equal(got, want) {
			t.Errorf("entry point %q recorded:\n%s\nwant:\n%s", forge, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestBreakGlassByCommentAppliesProd: a grant made through the forge's
// entry points (the request dispatched, the approvals by comment, as the
// Gitea workflow runs them) lets the ordinary prod run apply examples/hello
// with real Terraform and no prod approval; the use is recorded and its
// review open, and the evidence verifies.
func TestBreakGlassByCommentAppliesProd(t *testing.T) {
	terraformtest.Binary(t, runner.EngineTerraform)
	c := &consumer{t: t, dir: t.TempDir(), stateDir: t.TempDir(), env: map[string]string{"HOME": t.TempDir(), "USER": "dev-author"}}
	if err := os.CopyFS(c.dir, os.DirFS(filepath.Join("..", "examples", "hello"))); err != nil {
		t.Fatal(err)
	}
	approvers := filepath.Join(c.dir, runner.ApproversFile)
	writeFile(t, approvers, readFile(t, approvers)+"  breakglass:\n    members: [sre-1, sre-2, oncall]\n")
	trusted := []string{"--trusted-keys", signedCheckout(t, c.dir)}
	clock := time.Now().UTC()
	nova := func(wantCode int, args ...string) (string, runView) {
		t.Helper()
		full := append(args, "--dir", c.dir, "--state-dir", c.stateDir, "--output", "json")
		var stdout, stderr bytes.Buffer
		code := exitCode(run(t.Context(), Env{Args: full, Getenv: func(k string) string { return c.env[k] }, Environ: os.Environ(),
			Stdout: &stdout, Stderr: &stderr, Now: func() time.Time { return clock }}))
		if code != wantCode {
			t.Fatalf("nova %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
		}
		var v runView
		if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
			t.Fatalf("nova %v: stdout is not one JSON document: %v\n%s", args, err, stdout.String())
		}
		return stderr.String(), v
	}
	nova(ExitPass, append([]string{"run"}, trusted...)...)
	nova(ExitAwaitingApproval, append([]string{"run", "--env", "qa"}, trusted...)...)
	c.decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
	nova(ExitPass, append([]string{"apply", "--env", "qa"}, trusted...)...)
	if _, v := nova(ExitAwaitingApproval, append([]string{"run", "--env", "prod"}, trusted...)...); v.Reason == "" {
		t.Fatalf("prod without a grant: %+v", v)
	}

	// The Gitea workflow's commands, on the same checkout and evidence.
	w := &bgEntry{t: t, dir: c.dir, home: c.env["HOME"], clock: clock, forge: "gitea"}
	req := w.request("oncall", "checkout is down")
	w.comment(ExitFail, "oncall", "/nova break-glass approve "+req, false)
	w.comment(ExitPass, "sre-1", "/nova break-glass approve "+req, false)
	w.comment(ExitFail, "sre-2", "/nova break-glass approve "+req, true)
	if out := w.comment(ExitPass, "sre-2", "/nova break-glass approve "+req, false); !strings.Contains(out, "BREAK-GLASS GRANTED") {
		t.Fatalf("no grant:\n%s", out)
	}

	clock = clock.Add(time.Minute)
	stderr, prod := nova(ExitPass, append([]string{"run", "--env", "prod"}, trusted...)...)
	if !strings.Contains(stderr, "BREAK-GLASS") {
		t.Errorf("the break-glass apply said nothing loud on stderr:\n%s", stderr)
	}
	var types []string
	for _, e := range readEvents(t, prod.EventsFile) {
		types = append(types, e.Type)
		if e.Type == runner.EventApprovalRecorded {
			t.Errorf("prod applied with an approval recorded: %s", e.Data)
		}
	}
	if !slices.Contains(types, runner.EventBreakGlassUsed) || !slices.Contains(types, runner.EventApplyCompleted) {
		t.Fatalf("prod run events %v", types)
	}
	if a := stage(prod, "apply"); a.Verdict != runner.Pass || !strings.Contains(a.Summary, "added") {
		t.Fatalf("prod apply: %+v", a)
	}
	if out := w.exec(ExitPass, []string{"evidence", "query", "--open-reviews"}, nil); !strings.Contains(out, runner.EventBreakGlassUsed) {
		t.Errorf("no open review:\n%s", out)
	}
	if out := w.exec(ExitPass, []string{"evidence", "verify"}, nil); !strings.Contains(out, "result           OK") {
		t.Errorf("evidence verify:\n%s", out)
	}
}

// TestBreakGlassRequestIssueSaysWhereItStands: the issue Nova keeps for a
// request tells approvers the command to comment, then who granted and
// until when; what the requester wrote is escaped.
func TestBreakGlassRequestIssueSaysWhereItStands(t *testing.T) {
	ann := &announcements{comments: map[string]string{}, issues: map[string]string{}}
	var stderr bytes.Buffer
	a := breakGlassAction{forge: &forgeAdapters{issues: ann}, contractID: "c-1", env: Env{Stderr: &stderr}}
	at := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	req := &runner.BreakGlassState{Request: "req-1", Environment: runner.Prod, Requester: "oncall", Reason: "db <b>down</b> @everyone", RequestedAt: at}
	a.answer(t.Context(), req, "")
	body := ann.issues[requestMarker("c-1", "req-1")]
	if !strings.Contains(body, "/nova break-glass approve req-1") || strings.Contains(body, "<b>") || strings.Contains(body, "@everyone") {
		t.Errorf("the request's issue:\n%s", body)
	}
	req.Approvals = []runner.BreakGlassApprovalRef{{Approver: "sre-1", Event: "a1"}, {Approver: "sre-2", Event: "a2"}}
	req.Grant, req.Approvers, req.GrantedAt, req.ExpiresAt = "g-1", []runner.Login{"sre-1", "sre-2"}, at, at.Add(4*time.Hour)
	a.answer(t.Context(), req, "approved by @sre-2: granted")
	body = ann.issues[requestMarker("c-1", "req-1")]
	if len(ann.issues) != 1 || !strings.Contains(body, `**Granted** by @sre\-1 and @sre\-2 until 2026-12-02T07:00:00Z`) || !strings.Contains(body, "/nova break-glass revoke req-1") {
		t.Errorf("the granted request's issue (%d issues):\n%s", len(ann.issues), body)
	}
}
