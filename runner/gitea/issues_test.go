package gitea

import (
	"fmt"
	"net/http"
	"testing"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner/forgehttp"
	"github.com/nova-platform/nova/runner/gitea/giteatest"
)

// TestDriftIssueOnGitea keeps a drift issue on a real Gitea: opened,
// updated in place, left alone when unchanged, commented on and closed,
// and a new one opened when drift returns. An issue someone else opened
// with the marker in it is never taken for Nova's.
func TestDriftIssueOnGitea(t *testing.T) {
	const marker = "<!-- nova:drift:c0ffee00:prod -->"
	s := giteatest.Start(t)
	s.CreateOrg(t, org)
	bot, mallory := s.CreateUser(t, "nova-bot"), s.CreateUser(t, "mallory")
	s.CreateTeam(t, org, "deployers", "write", bot.Name)
	s.CreateRepo(t, org, repo)
	issuesPath := "/repos/" + org + "/" + repo + "/issues"
	// Five issues of others, so the list spans pages of two, one of them
	// quoting the marker.
	for i := range 4 {
		s.API(t, mallory.Token, http.MethodPost, issuesPath, map[string]string{"title": fmt.Sprintf("issue %d", i), "body": "unrelated"}, nil)
	}
	var planted sdk.Issue
	s.API(t, mallory.Token, http.MethodPost, issuesPath, map[string]string{"title": "planted", "body": "close me " + marker}, &planted)

	c, err := New(t.Context(), Config{URL: s.URL, Token: bot.Token, Owner: org, Repo: repo, Retry: forgehttp.Policy{Sleep: noWait}})
	if err != nil {
		t.Fatal(err)
	}
	c.pageSize = 2
	issues := c.Issues()
	ctx := t.Context()
	list := func() map[string]sdk.Issue {
		var all []sdk.Issue
		s.API(t, s.AdminToken, http.MethodGet, issuesPath+"?state=all&type=issues&limit=50", nil, &all)
		out := map[string]sdk.Issue{}
		for _, is := range all {
			out[fmt.Sprintf("%s#%d", is.Poster.UserName, is.Index)] = is
		}
		return out
	}

	if err := issues.CloseIssue(ctx, marker, "clear"); err != nil {
		t.Fatalf("closing without an issue: %v", err)
	}
	if err := issues.UpsertIssue(ctx, marker, "Drift: c0ffee00 in prod", marker+"\n1 resource"); err != nil {
		t.Fatal(err)
	}
	if err := issues.UpsertIssue(ctx, marker, "Drift: c0ffee00 in prod", marker+"\n2 resources"); err != nil {
		t.Fatal(err)
	}
	got := list()
	ours := got["nova-bot#6"]
	if len(got) != 6 || ours.Body != marker+"\n2 resources" || ours.State != sdk.StateOpen {
		t.Fatalf("after two upserts: %d issues, ours %+v", len(got), ours)
	}
	if err := issues.UpsertIssue(ctx, marker, "Drift: c0ffee00 in prod", marker+"\n2 resources"); err != nil {
		t.Fatal(err)
	}
	if after := list()["nova-bot#6"]; !after.Updated.Equal(ours.Updated) {
		t.Errorf("an unchanged upsert edited the issue (updated %s, was %s)", after.Updated, ours.Updated)
	}

	if err := issues.CloseIssue(ctx, marker, "No drift found by run r9"); err != nil {
		t.Fatal(err)
	}
	got = list()
	if got["nova-bot#6"].State != sdk.StateClosed || got[fmt.Sprintf("mallory#%d", planted.Index)].State != sdk.StateOpen {
		t.Errorf("after close: ours %s, the planted one %s", got["nova-bot#6"].State, got[fmt.Sprintf("mallory#%d", planted.Index)].State)
	}
	var comments []sdk.Comment
	s.API(t, s.AdminToken, http.MethodGet, issuesPath+"/6/comments", nil, &comments)
	var bodies []string
	for _, cm := range comments {
		bodies = append(bodies, cm.Poster.UserName+": "+cm.Body)
	}
	if diff := cmp.Diff([]string{"nova-bot: No drift found by run r9"}, bodies); diff != "" {
		t.Errorf("comments (-want +got):\n%s", diff)
	}

	if err := issues.UpsertIssue(ctx, marker, "Drift: c0ffee00 in prod", "3 resources"); err != nil {
		t.Fatal(err)
	}
	if again := list()["nova-bot#7"]; again.State != sdk.StateOpen || again.Body != "3 resources\n\n"+marker+"\n" {
		t.Errorf("drift returned: %+v", again)
	}
}
