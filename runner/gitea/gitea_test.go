package gitea

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/forgehttp"
	"github.com/nova-platform/nova/runner/gitea/giteatest"
)

// These tests run against a real Gitea (giteatest.Start): reviews,
// comments, pushes and teams are made through its API and git, and what
// the adapter reports is compared with what Gitea answers.

var byRef = cmpopts.SortSlices(func(a, b runner.ApprovalClaim) bool {
	x, _ := strconv.ParseInt(a.SourceRef, 10, 64)
	y, _ := strconv.ParseInt(b.SourceRef, 10, 64)
	return x < y
})

func refs(claims []runner.ApprovalClaim) []string {
	var out []string
	for _, c := range claims {
		out = append(out, c.SourceRef)
	}
	return out
}

func TestReviewsOnGitea(t *testing.T) {
	f := newForge(t)
	pushed := f.watchPushes(t)
	ctx := t.Context()
	src := f.c.Reviews()

	approval := f.review(t, f.qa, "APPROVED", "lgtm")
	readOnly := f.review(t, f.reader, "APPROVED", "lgtm too")
	outsider := f.review(t, f.outsider, "APPROVED", "drive-by")
	f.review(t, f.qa, "COMMENT", "nit: naming")
	rejection := f.review(t, f.sre, "REQUEST_CHANGES", "the plan destroys the database\n")
	dismissed := f.review(t, f.qa2, "APPROVED", "")
	f.s.API(t, f.s.AdminToken, http.MethodPost, f.pulls()+"/reviews/"+idKey(dismissed.ID)+"/dismissals",
		map[string]string{"message": "approved the wrong pull request"}, nil)

	// What Gitea itself says about them, which the source relies on.
	got := f.reviews(t)
	type flags struct{ Official, Dismissed bool }
	if diff := cmp.Diff(map[string]flags{
		"qa": {true, false}, "read-only": {false, false}, "outsider": {false, false}, "dismissed": {true, true},
	}, map[string]flags{
		"qa":        {got[approval.ID].Official, got[approval.ID].Dismissed},
		"read-only": {got[readOnly.ID].Official, got[readOnly.ID].Dismissed},
		"outsider":  {got[outsider.ID].Official, got[outsider.ID].Dismissed},
		"dismissed": {got[dismissed.ID].Official, got[dismissed.ID].Dismissed},
	}); diff != "" {
		t.Errorf("gitea's review flags (-want +got):\n%s", diff)
	}

	req := runner.ApprovalRequest{
		ContractID: "c1", Environment: runner.QA, PlanDigest: digest, Commit: f.head,
		PlannedAt: approval.Submitted.Add(-time.Second),
	}
	claims, err := src.Claims(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := []runner.ApprovalClaim{
		{
			Approver: f.qa.Name, Environment: runner.QA, PlanDigest: digest, Decision: runner.Approve,
			Source: runner.SourceGiteaReview, SourceRef: idKey(approval.ID), At: approval.Submitted.UTC(),
		},
		{
			Approver: f.sre.Name, Environment: runner.QA, PlanDigest: digest, Decision: runner.Reject,
			Reason: "the plan destroys the database", Source: runner.SourceGiteaReview, SourceRef: idKey(rejection.ID), At: rejection.Submitted.UTC(),
		},
	}
	if diff := cmp.Diff(want, claims, byRef); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if src.Name() != runner.SourceGiteaReview {
		t.Errorf("Name() = %q", src.Name())
	}

	t.Run("submitted before the plan was recorded", func(t *testing.T) {
		for _, at := range []time.Time{approval.Submitted, approval.Submitted.Add(time.Second)} {
			early := req
			early.PlannedAt = at
			claims, err := src.Claims(ctx, early)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range claims {
				if c.SourceRef == idKey(approval.ID) {
					t.Errorf("planned at %s: claim %+v from a review submitted at %s", at, c, approval.Submitted)
				}
			}
		}
	})

	t.Run("the approver's later rejection supersedes the approval", func(t *testing.T) {
		// Gitea keeps only a reviewer's latest approving or rejecting
		// review official; the source follows it.
		change := f.review(t, f.qa2, "REQUEST_CHANGES", "wait, not yet")
		again := f.review(t, f.qa2, "APPROVED", "ok now")
		claims, err := src.Claims(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{idKey(approval.ID), idKey(rejection.ID), idKey(again.ID)}, refs(claims), cmpopts.SortSlices(func(a, b string) bool {
			x, _ := strconv.Atoi(a)
			y, _ := strconv.Atoi(b)
			return x < y
		})); diff != "" {
			t.Errorf("claims (-want +got):\n%s\n(rejection %d superseded)", diff, change.ID)
		}
	})

	t.Run("a push makes the reviews stale", func(t *testing.T) {
		head2 := f.s.CommitFiles(t, org, repo, "feature", "main", map[string]string{"more.tf": "# more\n"}, f.author)
		pushed.wait(t, head2)
		if rv := f.reviews(t)[approval.ID]; !rv.Stale || rv.CommitID != f.head {
			t.Errorf("after the push gitea says the approval is stale=%t on %s, want stale on %s", rv.Stale, rv.CommitID, f.head)
		}

		// The plan of the old head: the pull request has moved past it.
		claims, err := src.Claims(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(claims) != 0 {
			t.Errorf("claims for the old head %s: %+v, want none", f.head, claims)
		}
		// A plan of the new head: no review has seen it yet.
		next := req
		next.Commit = head2
		claims, err = src.Claims(ctx, next)
		if err != nil {
			t.Fatal(err)
		}
		if len(claims) != 0 {
			t.Errorf("claims for the new head before any review of it: %+v, want none", claims)
		}
		// Approved again on the new head, it counts.
		fresh := f.review(t, f.qa, "APPROVED", "still fine")
		claims, err = src.Claims(ctx, next)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{idKey(fresh.ID)}, refs(claims)); diff != "" {
			t.Errorf("claims for the new head (-want +got):\n%s", diff)
		}
	})
}

func TestCommentsOnGitea(t *testing.T) {
	f := newForge(t)
	ctx := t.Context()
	src := f.c.Comments()

	approval := f.comment(t, f.qa, "/nova approve qa "+digest[:32])
	short := f.comment(t, f.qa, "/nova approve qa "+digest[:12])                     // too short: answered
	f.comment(t, f.sre, "/nova approve qa 0123456789abcdef0123456789abcdef")         // another plan
	capitals := f.comment(t, f.qa, "/nova approve QA "+strings.ToUpper(digest[:32])) // the same digest, in capitals
	prod := f.comment(t, f.qa, "/nova approve prod "+digest[:32])                    // another environment
	f.comment(t, f.reader, "LGTM, /nova approve qa "+digest[:32])                    // not a command
	f.comment(t, f.sre, "> /nova approve qa "+digest[:32]+"\n\nwho approved?")       // a quote
	rejection := f.comment(t, f.sre, "/nova reject qa the plan deletes the bucket\nand its backups")
	production := f.comment(t, f.sre, "/nova reject production no")   // answered, never dropped
	outsider := f.comment(t, f.outsider, "/nova approve qa "+digest)  // sources do not check membership…
	author := f.comment(t, f.author, "/nova approve qa "+digest[:40]) // …nor authorship

	req := runner.ApprovalRequest{
		ContractID: "c1", Environment: runner.QA, PlanDigest: digest, Commit: f.head,
		PlannedAt: approval.Created.Add(-time.Second),
	}
	claims, err := src.Claims(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	claim := func(u string, cm sdk.Comment, d runner.Decision, env runner.Environment, reason string) runner.ApprovalClaim {
		return runner.ApprovalClaim{
			Approver: u, Environment: env, PlanDigest: digest, Decision: d, Reason: reason,
			Source: runner.SourceGiteaComment, SourceRef: idKey(cm.ID), At: cm.Created.UTC(),
		}
	}
	problem := func(c runner.ApprovalClaim) runner.ApprovalClaim {
		c.Problem = "*"
		return c
	}
	for i := range claims {
		if claims[i].Problem != "" {
			claims[i].Problem = "*"
		}
	}
	want := []runner.ApprovalClaim{
		claim(f.qa.Name, approval, runner.Approve, runner.QA, ""),
		problem(claim(f.qa.Name, short, runner.Approve, runner.QA, "")),
		claim(f.qa.Name, capitals, runner.Approve, runner.QA, ""),
		claim(f.sre.Name, rejection, runner.Reject, runner.QA, "the plan deletes the bucket\nand its backups"),
		problem(claim(f.sre.Name, production, runner.Reject, runner.QA, "")),
		claim(f.outsider.Name, outsider, runner.Approve, runner.QA, ""),
		claim(f.author.Name, author, runner.Approve, runner.QA, ""),
	}
	if diff := cmp.Diff(want, claims, byRef); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if src.Name() != runner.SourceGiteaComment {
		t.Errorf("Name() = %q", src.Name())
	}

	t.Run("another environment", func(t *testing.T) {
		other := req
		other.Environment = runner.Prod
		claims, err := src.Claims(ctx, other)
		if err != nil {
			t.Fatal(err)
		}
		// The command naming an unknown environment is answered in every
		// environment's run, prod's included.
		for i := range claims {
			if claims[i].Problem != "" {
				claims[i].Problem = "*"
			}
		}
		want := []runner.ApprovalClaim{claim(f.qa.Name, prod, runner.Approve, runner.Prod, ""), problem(claim(f.sre.Name, production, runner.Reject, runner.Prod, ""))}
		if diff := cmp.Diff(want, claims, byRef); diff != "" {
			t.Errorf("claims (-want +got):\n%s", diff)
		}
	})

	t.Run("another plan", func(t *testing.T) {
		other := req
		other.PlanDigest = "0123456789abcdef0123456789abcdef" + digest[32:]
		claims, err := src.Claims(ctx, other)
		if err != nil {
			t.Fatal(err)
		}
		// Only the rejections (of whatever plan is current), the answered
		// commands and the prefix of this other plan match.
		for _, c := range claims {
			if c.Decision == runner.Approve && c.Problem == "" && c.Approver != f.sre.Name {
				t.Errorf("claim %+v approves a plan it does not name", c)
			}
		}
		if len(claims) != 4 {
			t.Errorf("claims %+v, want the two rejections, the short approval answered, and sam's approval", claims)
		}
	})

	t.Run("posted before the plan was recorded", func(t *testing.T) {
		// An approval stamped in the plan's own second counts (it names the
		// digest); one a second before the plan does not.
		for _, at := range []time.Time{approval.Created.Add(time.Second)} {
			early := req
			early.PlannedAt = at
			claims, err := src.Claims(ctx, early)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range claims {
				if c.SourceRef == idKey(approval.ID) {
					t.Errorf("planned at %s: claim %+v from a comment posted at %s", at, c, approval.Created)
				}
			}
		}
	})
}

func TestUpsertCommentOnGitea(t *testing.T) {
	f := newForge(t)
	ctx := t.Context()
	pr := f.c.PullRequest()
	const marker = runner.CommentPrefix + "comment contract=c1 env=qa -->"

	// Someone quoting Nova's comment carries its marker; someone passing
	// a comment of theirs off as Nova's starts with it. Neither is ever
	// edited, though Nova's token (an owner's) could.
	quote := f.comment(t, f.qa, "> "+marker+"\n> Plan: 1 to add\n\nwhy add it?")
	impostor := f.comment(t, f.qa, marker+"\nqa: approved ✅")

	mine := func(marker string) []sdk.Comment {
		var out []sdk.Comment
		for _, cm := range f.comments(t) {
			if cm.Poster != nil && cm.Poster.UserName == f.bot.Name && strings.HasPrefix(cm.Body, marker) {
				out = append(out, cm)
			}
		}
		return out
	}

	first := marker + "\nPlan: 1 to add, 0 to change, 0 to destroy."
	if err := pr.UpsertComment(ctx, marker, first); err != nil {
		t.Fatal(err)
	}
	created := mine(marker)
	if len(created) != 1 || created[0].Body != first {
		t.Fatalf("after the first upsert, nova's comments with the marker: %+v, want one saying %q", created, first)
	}

	second := marker + "\nPlan: 2 to add, 0 to change, 0 to destroy."
	if err := pr.UpsertComment(ctx, marker, second); err != nil {
		t.Fatal(err)
	}
	updated := mine(marker)
	if len(updated) != 1 || updated[0].ID != created[0].ID || updated[0].Body != second {
		t.Errorf("after the second upsert, nova's comments with the marker: %+v, want comment %d saying %q", updated, created[0].ID, second)
	}
	// Again with the same body: nothing to do.
	if err := pr.UpsertComment(ctx, marker, second); err != nil {
		t.Fatal(err)
	}
	for _, cm := range f.comments(t) {
		if (cm.ID == quote.ID && cm.Body != quote.Body) || (cm.ID == impostor.ID && cm.Body != impostor.Body) {
			t.Errorf("bob's comment %d was edited to %q", cm.ID, cm.Body)
		}
	}

	// Two runs raced and each posted one: the next keeps the first and
	// marks the other superseded, so one report stands. The next run is
	// another process, which lists the comments anew (a PullRequest keeps
	// the listing it read for the contracts of its own process).
	dup := f.comment(t, f.bot, marker+"\nPlan: from a racing run")
	third := marker + "\nPlan: 3 to add, 0 to change, 0 to destroy."
	pr = f.c.PullRequest()
	if err := pr.UpsertComment(ctx, marker, third); err != nil {
		t.Fatal(err)
	}
	if got := mine(marker); len(got) != 1 || got[0].ID != created[0].ID || got[0].Body != third {
		t.Errorf("after a duplicate, nova's comments with the marker: %+v, want comment %d alone", got, created[0].ID)
	}
	for _, cm := range f.comments(t) {
		if cm.ID == dup.ID && !strings.HasPrefix(cm.Body, runner.CommentPrefix+"superseded -->") {
			t.Errorf("the duplicate says %q, want it marked superseded", cm.Body)
		}
	}

	// Gitea refuses a token the edit of a comment that is not its user's
	// unless it may write the repository's pulls: then a new comment
	// stands (runner.KeepComment), never an error.
	err := f.client(t, f.outsider.Token).PullRequest().EditComment(ctx, created[0].ID, "olga was here")
	if !errors.Is(err, runner.ErrCommentNotEditable) || !strings.Contains(err.Error(), "403") {
		t.Errorf("an outsider editing nova's comment: %v, want %v", err, runner.ErrCommentNotEditable)
	}

	// Another marker is another comment.
	const prod = runner.CommentPrefix + "comment contract=c1 env=prod -->"
	for _, body := range []string{prod + "\nprod plan", prod + "\nprod plan, again"} {
		if err := pr.UpsertComment(ctx, prod, body); err != nil {
			t.Fatal(err)
		}
	}
	if got := mine(prod); len(got) != 1 || got[0].Body != prod+"\nprod plan, again" {
		t.Errorf("nova's prod comments: %+v, want one", got)
	}

	before := len(f.comments(t))
	err = pr.UpsertComment(ctx, marker, marker+strings.Repeat("x", MaxCommentLength))
	wantReason(t, err, runner.ForgeAPIFailed, "more than the 65536 a comment may hold")
	err = pr.UpsertComment(ctx, prod, "a body without its marker first\n"+prod)
	wantReason(t, err, runner.InternalError, "must start with a marker")
	if after := len(f.comments(t)); after != before {
		t.Errorf("a refused body still changed the comments: %d, then %d", before, after)
	}
	if got := mine(marker); len(got) != 1 || got[0].Body != third {
		t.Errorf("a refused body changed nova's comment: %+v", got)
	}
}

// TestForgeOnGitea runs the checks that leave the pull request as it is
// on one server: starting Gitea is most of each test's time.
func TestForgeOnGitea(t *testing.T) {
	f := newForge(t)
	t.Run("teams", func(t *testing.T) { testTeams(t, f) })
	t.Run("change", func(t *testing.T) { testChange(t, f) })
	t.Run("statuses", func(t *testing.T) { testStatuses(t, f) })
	t.Run("token errors", func(t *testing.T) { testTokenErrors(t, f) })
	t.Run("pull request states", func(t *testing.T) { testPullRequestStates(t, f) })
}

func testTeams(t *testing.T, f *forge) {
	ctx := t.Context()
	teams := f.c.Teams()

	tests := []struct {
		team, login string
		want        bool
	}{
		{"platform/qa", f.qa.Name, true},
		{"platform/qa", f.qa2.Name, true},
		{"platform/QA", f.qa.Name, true},
		{"platform/qa", f.sre.Name, false},
		{"platform/qa", f.author.Name, false},
		{"platform/qa", f.outsider.Name, false},
		{"platform/qa", "nobody-at-all", false},
		{"platform/sre", f.sre.Name, true},
		{"platform/sre", f.qa.Name, false},
		{"platform/auditors", f.reader.Name, true},
	}
	for _, tc := range tests {
		got, err := teams.IsTeamMember(ctx, tc.team, tc.login)
		if err != nil {
			t.Errorf("IsTeamMember(%s, %s): %v", tc.team, tc.login, err)
			continue
		}
		if got != tc.want {
			t.Errorf("IsTeamMember(%s, %s) = %t, want %t", tc.team, tc.login, got, tc.want)
		}
	}

	_, err := teams.IsTeamMember(ctx, "platform/release-managers", f.qa.Name)
	wantReason(t, err, runner.ApproversInvalid, "platform/release-managers", `has no team "release-managers"`)
	_, err = teams.IsTeamMember(ctx, "nowhere/qa", f.qa.Name)
	wantReason(t, err, runner.ApproverTeamUnreadable, "finding team nowhere/qa", "404")
	_, err = teams.IsTeamMember(ctx, "qa", f.qa.Name)
	wantReason(t, err, runner.ApproversInvalid, "not org/team")
	if err := teams.CheckTeam(ctx, "platform/qa"); err != nil {
		t.Errorf("CheckTeam with an owner's token: %v", err)
	}

	// A token of someone in the organisation but neither an owner nor in
	// the team: Gitea refuses to say, and that is an error, never "no",
	// from the first check on.
	member := f.client(t, f.author.Token).Teams()
	err = member.CheckTeam(ctx, "platform/qa")
	wantReason(t, err, runner.ApproverTeamUnreadable, "reading the members of team platform/qa", "403", "Must be a team member", "read:organization")
	_, err = member.IsTeamMember(ctx, "platform/qa", f.qa.Name)
	wantReason(t, err, runner.ApproverTeamUnreadable, "reading the members of team platform/qa", "403", "Must be a team member")
	if strings.Contains(err.Error(), f.author.Token) {
		t.Errorf("error holds the token: %v", err)
	}
	// The team it is in, it may read: there a 404 is "not a member".
	if got, err := member.IsTeamMember(ctx, "platform/dev", f.qa.Name); err != nil || got {
		t.Errorf("IsTeamMember(platform/dev, %s) with a dev's token = %t, %v; want false", f.qa.Name, got, err)
	}

	// A token of someone outside the organisation. Gitea answers its
	// membership questions with the 404 of "not a member"; the team is
	// never read, so that 404 is never taken for an answer.
	var probe any
	apiErr := f.s.Do(ctx, f.outsider.Token, http.MethodGet, "/teams/"+idKey(f.teamID(t, "qa"))+"/members/"+f.qa.Name, nil, &probe)
	var ae *giteatest.APIError
	if !errors.As(apiErr, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("gitea's answer to an outsider asking about a member: %v, want 404 (what this test guards against)", apiErr)
	}
	_, err = f.client(t, f.outsider.Token).Teams().IsTeamMember(ctx, "platform/qa", f.qa.Name)
	wantReason(t, err, runner.ApproverTeamUnreadable, "finding team platform/qa", "403", "Must be an organization member")
}

func testChange(t *testing.T, f *forge) {
	got, err := f.c.PullRequest().Change(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The ghost commit's email belongs to no account: its author is
	// unknown, and the commit is named for it.
	want := runner.Change{Authors: []runner.Login{runner.LoginOf(f.author.Name), runner.LoginOf(f.qa.Name)}, Unlinked: []string{f.head}, Head: f.head, Base: f.base}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("change (-want +got):\n%s", diff)
	}
}

func testStatuses(t *testing.T, f *forge) {
	ctx := t.Context()
	st := f.c.Statuses()
	target := f.s.URL + "/" + org + "/" + repo + "/actions/runs/1"

	set := []runner.CommitStatus{
		{Context: "nova/qa", State: runner.StatePending, Description: "awaiting approval", TargetURL: target},
		{Context: "nova/qa", State: runner.StateSuccess, Description: "approved by bob", TargetURL: target},
		{Context: "nova/prod", State: runner.StateFailure, Description: "rejected by sam"},
	}
	for _, s := range set {
		if err := st.SetStatus(ctx, f.head, s); err != nil {
			t.Fatal(err)
		}
	}

	// The list's newest status per context is what Gitea shows.
	var list []sdk.Status
	f.s.API(t, f.bot.Token, http.MethodGet, "/repos/"+org+"/"+repo+"/commits/"+f.head+"/statuses", nil, &list)
	newest := map[string]sdk.Status{}
	for _, s := range list {
		if s.ID > newest[s.Context].ID {
			newest[s.Context] = s
		}
	}
	got := map[string]runner.CommitStatus{}
	for c, s := range newest {
		got[c] = runner.CommitStatus{Context: s.Context, State: runner.CommitState(s.State), Description: s.Description, TargetURL: s.TargetURL}
	}
	if diff := cmp.Diff(map[string]runner.CommitStatus{"nova/qa": set[1], "nova/prod": set[2]}, got); diff != "" {
		t.Errorf("statuses on %s (-want +got):\n%s", f.head, diff)
	}
	if len(list) != 3 {
		t.Errorf("%d statuses listed, want 3", len(list))
	}

	err := st.SetStatus(ctx, f.head, runner.CommitStatus{Context: "nova/qa", State: "warning"})
	wantReason(t, err, runner.InternalError, `state "warning"`)
}

// testTokenErrors provokes the real server's refusals: a token it does
// not know, and one without the scopes Nova needs.
func testTokenErrors(t *testing.T, f *forge) {
	ctx := t.Context()

	unknown := "0123456789abcdef0123456789abcdef01234567"
	stranger, err := New(ctx, Config{URL: f.s.URL, Token: unknown, Owner: org, Repo: repo, PullRequest: f.pr, Retry: forgehttp.Policy{Sleep: noWait}})
	if err != nil {
		t.Fatalf("New asks nothing, yet: %v", err)
	}
	_, err = stranger.Comments().Claims(ctx, runner.ApprovalRequest{Environment: runner.QA, PlanDigest: digest, Commit: f.head})
	wantReason(t, err, runner.ForgeAPIFailed, "listing the comments", "invalid or lacks a scope", "401")
	if strings.Contains(err.Error(), unknown) {
		t.Errorf("error holds the token: %v", err)
	}

	scoped := f.scopedToken(t, f.bot, "read:repository")
	c := f.client(t, scoped)
	_, err = c.Teams().IsTeamMember(ctx, "platform/qa", f.qa.Name)
	wantReason(t, err, runner.ApproverTeamUnreadable, "403", "lacks a scope", "read:organization")
	type refusal struct {
		scope string
		err   error
	}
	var errs []refusal
	_, claimsErr := c.Comments().Claims(ctx, runner.ApprovalRequest{Environment: runner.QA, PlanDigest: digest, Commit: f.head})
	// An upsert lists the comments first; it asks who the token is only
	// when a person's comment carries the marker.
	errs = append(errs, refusal{"read:issue", claimsErr},
		refusal{"read:issue", c.PullRequest().UpsertComment(ctx, runner.CommentPrefix+" -->", runner.CommentPrefix+" -->\nbody")},
		refusal{"write:repository", c.Statuses().SetStatus(ctx, f.head, runner.CommitStatus{Context: "nova/qa", State: runner.StatePending})})
	_, meErr := c.PullRequest().Me(ctx)
	errs = append(errs, refusal{"read:user", meErr})
	for _, r := range errs {
		wantReason(t, r.err, runner.ForgeAPIFailed, "403", "lacks a scope", r.scope)
		if r.err != nil && strings.Contains(r.err.Error(), scoped) {
			t.Errorf("error holds the token: %v", r.err)
		}
	}
	// What the scope allows still works.
	if _, err := c.Reviews().Claims(ctx, runner.ApprovalRequest{Environment: runner.QA, PlanDigest: digest, Commit: f.head}); err != nil {
		t.Errorf("reading reviews with read:repository: %v", err)
	}
}
