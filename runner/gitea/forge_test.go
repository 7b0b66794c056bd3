package gitea

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner/forgehttp"
	"github.com/nova-platform/nova/runner/gitea/giteatest"
)

const (
	org  = "platform"
	repo = "infra"
)

// forge is a real Gitea set up as a consumer's: an organisation with
// approver teams, a repository, and a pull request of three commits.
type forge struct {
	s *giteatest.Server
	// author wrote the pull request (team dev, write); qa and qa2 are in qa
	// (write), sre in sre (write), reader in auditors (read); outsider is
	// in no team; bot is Nova, an owner of the organisation.
	author, qa, qa2, sre, reader, outsider, bot giteatest.User
	pr                                          int64
	// base is main's head when the pull request was opened; head is the
	// pull request's head: commits by author, by qa, and by an email
	// Gitea knows no account for.
	base, head string
	// c is a Client as bot, asking for two items a page so that every
	// list spans pages.
	c *Client
}

func newForge(t *testing.T) *forge {
	t.Helper()
	s := giteatest.Start(t)
	f := &forge{s: s}
	f.author = s.CreateUser(t, "alice")
	f.qa = s.CreateUser(t, "bob")
	f.qa2 = s.CreateUser(t, "quinn")
	f.sre = s.CreateUser(t, "sam")
	f.reader = s.CreateUser(t, "reed")
	f.outsider = s.CreateUser(t, "olga")
	f.bot = s.CreateUser(t, "nova-bot")
	s.CreateOrg(t, org)
	s.CreateTeam(t, org, "dev", "write", f.author.Name)
	s.CreateTeam(t, org, "qa", "write", f.qa.Name, f.qa2.Name)
	s.CreateTeam(t, org, "sre", "write", f.sre.Name)
	s.CreateTeam(t, org, "auditors", "read", f.reader.Name)
	// Gitea tells team membership only to the team's members and the
	// organisation's owners, so Nova's bot is an owner.
	s.API(t, s.AdminToken, http.MethodPut, fmt.Sprintf("/teams/%d/members/%s", f.teamID(t, "Owners"), f.bot.Name), nil, nil)
	s.CreateRepo(t, org, repo)

	var branch struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	s.API(t, s.AdminToken, http.MethodGet, "/repos/"+org+"/"+repo+"/branches/main", nil, &branch)
	f.base = branch.Commit.ID
	s.CommitFiles(t, org, repo, "feature", "main", map[string]string{"main.tf": "terraform {}\n"}, f.author)
	s.CommitFiles(t, org, repo, "feature", "main", map[string]string{"qa.tf": "# qa\n"}, f.qa)
	ghost := giteatest.User{Name: f.author.Name, Email: "ghost@nowhere.example", Token: f.author.Token}
	f.head = s.CommitFiles(t, org, repo, "feature", "main", map[string]string{"ghost.tf": "# ghost\n"}, ghost)
	f.pr = int64(s.CreatePullRequest(t, org, repo, "feature", "main", "Add main.tf", f.author))
	f.c = f.client(t, f.bot.Token)
	return f
}

func (f *forge) client(t *testing.T, token string) *Client {
	t.Helper()
	c, err := New(t.Context(), Config{
		URL: f.s.URL, Token: token, Owner: org, Repo: repo, PullRequest: f.pr,
		Retry: forgehttp.Policy{Sleep: noWait},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.pageSize = 2
	return c
}

func (f *forge) teamID(t *testing.T, name string) int64 {
	t.Helper()
	var teams []sdk.Team
	f.s.API(t, f.s.AdminToken, http.MethodGet, "/orgs/"+org+"/teams", nil, &teams)
	for _, tm := range teams {
		if tm.Name == name {
			return tm.ID
		}
	}
	t.Fatalf("no team %s in %s", name, org)
	return 0
}

func (f *forge) pulls() string  { return fmt.Sprintf("/repos/%s/%s/pulls/%d", org, repo, f.pr) }
func (f *forge) issues() string { return fmt.Sprintf("/repos/%s/%s/issues/%d", org, repo, f.pr) }

// review submits a review as u ("APPROVED", "REQUEST_CHANGES", "COMMENT").
func (f *forge) review(t *testing.T, u giteatest.User, event, body string) sdk.PullReview {
	t.Helper()
	var rv sdk.PullReview
	f.s.API(t, u.Token, http.MethodPost, f.pulls()+"/reviews", map[string]string{"event": event, "body": body}, &rv)
	return rv
}

func (f *forge) reviews(t *testing.T) map[int64]sdk.PullReview {
	t.Helper()
	var list []sdk.PullReview
	f.s.API(t, f.s.AdminToken, http.MethodGet, f.pulls()+"/reviews", nil, &list)
	out := map[int64]sdk.PullReview{}
	for _, rv := range list {
		out[rv.ID] = rv
	}
	return out
}

// comment posts a comment on the pull request as u.
func (f *forge) comment(t *testing.T, u giteatest.User, body string) sdk.Comment {
	t.Helper()
	var cm sdk.Comment
	f.s.API(t, u.Token, http.MethodPost, f.issues()+"/comments", map[string]string{"body": body}, &cm)
	return cm
}

func (f *forge) comments(t *testing.T) []sdk.Comment {
	t.Helper()
	var list []sdk.Comment
	f.s.API(t, f.s.AdminToken, http.MethodGet, f.issues()+"/comments", nil, &list)
	return list
}

// scopedToken makes a token for u with only scopes. Gitea issues tokens
// to basic auth only.
func (f *forge) scopedToken(t *testing.T, u giteatest.User, scopes ...string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": "scoped", "scopes": scopes})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.s.URL+"/api/v1/users/"+url.PathEscape(u.Name)+"/tokens", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(u.Name, u.Password)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		SHA1 string `json:"sha1"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != http.StatusCreated || tok.SHA1 == "" {
		t.Fatalf("creating a token for %s: status %d, %v", u.Name, resp.StatusCode, err)
	}
	return tok.SHA1
}

// pushes records the pull request synchronisations Gitea announces.
// Gitea handles a push to a pull request's branch in the background:
// it moves the head, then marks reviews of the older head stale, then
// sends this webhook. Waiting for it waits for the event itself.
type pushes struct{ heads chan string }

func (f *forge) watchPushes(t *testing.T) *pushes {
	t.Helper()
	p := &pushes{heads: make(chan string, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var payload struct {
			Action      string `json:"action"`
			PullRequest struct {
				Head struct {
					SHA string `json:"sha"`
				} `json:"head"`
			} `json:"pull_request"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &payload) == nil && payload.Action == "synchronized" {
			select {
			case p.heads <- payload.PullRequest.Head.SHA:
			default:
			}
		}
	}))
	t.Cleanup(srv.Close)
	f.s.API(t, f.s.AdminToken, http.MethodPost, "/repos/"+org+"/"+repo+"/hooks", map[string]any{
		"type": "gitea", "active": true, "events": []string{"pull_request"},
		"config": map[string]string{"url": srv.URL, "content_type": "json"},
	}, nil)
	return p
}

func (p *pushes) wait(t *testing.T, head string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		select {
		case h := <-p.heads:
			if h == head {
				return
			}
		case <-ctx.Done():
			t.Fatalf("gitea announced no synchronisation to %s: %v", head, ctx.Err())
		}
	}
}
