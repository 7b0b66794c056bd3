package giteatest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner/gitea/giteatest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the real Gitea")

// fixtureURL stands in for the test server's URL in testdata, so fixtures
// do not change with the port; it is Gitea's default.
const fixtureURL = "http://127.0.0.1:3000"

const (
	org  = "platform"
	repo = "infra"
)

// TestServer drives a real Gitea through the flow Nova's Gitea adapter
// depends on, asserts what the API answers, and checks that the JSON
// samples in testdata still have the shape this Gitea returns.
func TestServer(t *testing.T) {
	s := giteatest.Start(t)
	hooks := newHookRecorder(t)

	alice := s.CreateUser(t, "alice") // author, in sre
	bob := s.CreateUser(t, "bob")     // reviewer, in qa
	carol := s.CreateUser(t, "carol") // read-only, in auditors
	s.CreateOrg(t, org)
	qa := s.CreateTeam(t, org, "qa", "write", bob.Name)
	sre := s.CreateTeam(t, org, "sre", "write", alice.Name)
	s.CreateTeam(t, org, "auditors", "read", carol.Name)
	s.CreateRepo(t, org, repo)
	s.API(t, s.AdminToken, http.MethodPost, "/repos/"+org+"/"+repo+"/hooks", map[string]any{
		"type":   "gitea",
		"active": true,
		"events": []string{"pull_request"}, // every pull request event, reviews and comments included
		"config": map[string]string{"url": hooks.URL, "content_type": "json"},
	}, nil)

	sha := s.CommitFiles(t, org, repo, "feature", "main", map[string]string{
		"main.tf":         "terraform {}\n",
		"modules/a/a.tf":  "# a\n",
		"docs/README.txt": "hello\n",
	}, alice)
	n := s.CreatePullRequest(t, org, repo, "feature", "main", "Add main.tf", alice)
	pulls := fmt.Sprintf("/repos/%s/%s/pulls/%d", org, repo, n)
	issue := fmt.Sprintf("/repos/%s/%s/issues/%d", org, repo, n)

	// Pull request as the API reports it.
	var pullRaw json.RawMessage
	s.API(t, bob.Token, http.MethodGet, pulls, nil, &pullRaw)
	var pull struct {
		Number int    `json:"number"`
		State  string `json:"state"`
		User   login  `json:"user"`
		Head   ref    `json:"head"`
		Base   ref    `json:"base"`
	}
	decode(t, pullRaw, &pull)
	type pullView struct {
		Number                    int
		State, Author             string
		HeadRef, HeadSHA, BaseRef string
		HeadRepo, BaseRepo        string
	}
	if diff := cmp.Diff(pullView{n, "open", alice.Name, "feature", sha, "main", org + "/" + repo, org + "/" + repo},
		pullView{pull.Number, pull.State, pull.User.Login, pull.Head.Ref, pull.Head.SHA, pull.Base.Ref, pull.Head.Repo.FullName, pull.Base.Repo.FullName}); diff != "" {
		t.Errorf("GET %s (-want +got):\n%s", pulls, diff)
	}
	opened := hooks.wait(t, "pull_request", "opened")

	// Team membership.
	var teamsRaw, qaMembersRaw json.RawMessage
	s.API(t, s.AdminToken, http.MethodGet, "/orgs/"+org+"/teams", nil, &teamsRaw)
	s.API(t, s.AdminToken, http.MethodGet, fmt.Sprintf("/teams/%d/members", qa), nil, &qaMembersRaw)
	var sreMembers []login
	s.API(t, s.AdminToken, http.MethodGet, fmt.Sprintf("/teams/%d/members", sre), nil, &sreMembers)
	var qaMembers []login
	decode(t, qaMembersRaw, &qaMembers)
	if diff := cmp.Diff(map[string][]string{"qa": {bob.Name}, "sre": {alice.Name}},
		map[string][]string{"qa": logins(qaMembers), "sre": logins(sreMembers)}); diff != "" {
		t.Errorf("team members (-want +got):\n%s", diff)
	}

	// Reviews: who may approve, and what counts.
	reviewCases := []struct {
		name       string
		as         giteatest.User
		wantStatus int  // 0: accepted
		official   bool // Gitea's "counts towards approval"
	}{
		{name: "author cannot approve own pull", as: alice, wantStatus: http.StatusUnprocessableEntity},
		{name: "write member approves officially", as: bob, official: true},
		{name: "read member approves unofficially", as: carol, official: false},
	}
	for _, tc := range reviewCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var got review
			err := s.Do(ctx, tc.as.Token, http.MethodPost, pulls+"/reviews",
				map[string]string{"event": "APPROVED", "body": "lgtm from " + tc.as.Name}, &got)
			if tc.wantStatus != 0 {
				var apiErr *giteatest.APIError
				if !errors.As(err, &apiErr) || apiErr.Status != tc.wantStatus {
					t.Fatalf("POST reviews as %s: got %v, want status %d", tc.as.Name, err, tc.wantStatus)
				}
				return
			}
			if err != nil {
				t.Fatalf("POST reviews as %s: %v", tc.as.Name, err)
			}
			want := review{State: "APPROVED", User: login{tc.as.Name}, Official: tc.official, CommitID: sha}
			if diff := cmp.Diff(want, got.view()); diff != "" {
				t.Errorf("created review (-want +got):\n%s", diff)
			}
		})
	}
	var reviewsRaw json.RawMessage
	s.API(t, alice.Token, http.MethodGet, pulls+"/reviews", nil, &reviewsRaw)
	var reviews []review
	decode(t, reviewsRaw, &reviews)
	var gotReviews []review
	for _, r := range reviews {
		gotReviews = append(gotReviews, r.view())
	}
	if diff := cmp.Diff([]review{
		{State: "APPROVED", User: login{bob.Name}, Official: true, CommitID: sha},
		{State: "APPROVED", User: login{carol.Name}, Official: false, CommitID: sha},
	}, gotReviews); diff != "" {
		t.Errorf("GET %s/reviews (-want +got):\n%s", pulls, diff)
	}
	approved := hooks.wait(t, "pull_request_approved", "reviewed")

	// Issue comment on the pull request.
	const commentBody = "Plan: 1 to add, 0 to change, 0 to destroy."
	s.API(t, bob.Token, http.MethodPost, issue+"/comments", map[string]string{"body": commentBody}, nil)
	var commentsRaw json.RawMessage
	s.API(t, alice.Token, http.MethodGet, issue+"/comments", nil, &commentsRaw)
	var comments []comment
	decode(t, commentsRaw, &comments)
	if !slices.Contains(comments, comment{Body: commentBody, User: login{bob.Name}}) {
		t.Errorf("GET %s/comments = %s, want bob's comment %q", issue, commentsRaw, commentBody)
	}
	commented := hooks.wait(t, "issue_comment", "created")

	// Commit status: POST takes "state", the answer calls it "status".
	statuses := fmt.Sprintf("/repos/%s/%s/statuses/%s", org, repo, sha)
	var statusRaw json.RawMessage
	s.API(t, alice.Token, http.MethodPost, statuses, map[string]string{
		"state":       "success",
		"context":     "nova/plan",
		"description": "plan passed policy",
		"target_url":  s.URL + "/" + org + "/" + repo,
	}, &statusRaw)
	var statusListRaw, combinedRaw json.RawMessage
	s.API(t, bob.Token, http.MethodGet, fmt.Sprintf("/repos/%s/%s/commits/%s/statuses", org, repo, sha), nil, &statusListRaw)
	s.API(t, bob.Token, http.MethodGet, fmt.Sprintf("/repos/%s/%s/commits/%s/status", org, repo, sha), nil, &combinedRaw)
	var statusList []struct {
		Context string `json:"context"`
		Status  string `json:"status"`
		Creator login  `json:"creator"`
	}
	decode(t, statusListRaw, &statusList)
	var combined struct {
		State string `json:"state"`
		SHA   string `json:"sha"`
	}
	decode(t, combinedRaw, &combined)
	type statusView struct{ Context, Status, Creator, Combined, CombinedSHA string }
	var gotStatus statusView
	if len(statusList) == 1 {
		gotStatus = statusView{statusList[0].Context, statusList[0].Status, statusList[0].Creator.Login, combined.State, combined.SHA}
	}
	if diff := cmp.Diff(statusView{"nova/plan", "success", alice.Name, "success", sha}, gotStatus); diff != "" {
		t.Errorf("commit statuses (-want +got):\n%s\nlist: %s", diff, statusListRaw)
	}

	fixtures := []struct {
		file string
		raw  json.RawMessage
	}{
		{"pull.json", pullRaw},
		{"teams.json", teamsRaw},
		{"team_members.json", qaMembersRaw},
		{"reviews.json", reviewsRaw},
		{"issue_comments.json", commentsRaw},
		{"commit_status.json", statusRaw},
		{"commit_statuses.json", statusListRaw},
		{"combined_status.json", combinedRaw},
		{"hook_pull_request_opened.json", opened},
		{"hook_pull_request_approved.json", approved},
		{"hook_issue_comment_created.json", commented},
	}
	for _, f := range fixtures {
		t.Run(f.file, func(t *testing.T) { checkFixture(t, s, f.file, f.raw) })
	}
}

// BenchmarkStart measures Start: migrate, admin creation and boot, with the
// binary already built. Run it with -benchtime=1x; every server lives until
// the benchmark ends.
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		giteatest.Start(b)
	}
}

type login struct {
	Login string `json:"login"`
}

type comment struct {
	Body string `json:"body"`
	User login  `json:"user"`
}

type ref struct {
	Ref  string `json:"ref"`
	SHA  string `json:"sha"`
	Repo struct {
		FullName string `json:"full_name"`
	} `json:"repo"`
}

type review struct {
	State    string `json:"state"`
	User     login  `json:"user"`
	Official bool   `json:"official"`
	CommitID string `json:"commit_id"`
	Body     string `json:"body"`
}

// view drops the free-text body, which the table does not pin.
func (r review) view() review {
	r.Body = ""
	return r
}

func logins(ls []login) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Login)
	}
	return out
}

func decode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
}

// hookRecorder is an HTTP server standing in for a webhook receiver.
type hookRecorder struct {
	URL        string
	deliveries chan delivery
}

type delivery struct {
	event string // X-Gitea-Event
	body  []byte
}

func newHookRecorder(t *testing.T) *hookRecorder {
	r := &hookRecorder{deliveries: make(chan delivery, 64)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		// Never block Gitea's delivery queue; a full buffer means the test
		// has stopped listening.
		select {
		case r.deliveries <- delivery{event: req.Header.Get("X-Gitea-Event"), body: b}:
		default:
		}
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// wait returns the payload of the first delivery of event with action,
// skipping the others. Deliveries are asynchronous in Gitea, so this waits
// for the event itself, bounded by a deadline.
func (r *hookRecorder) wait(t *testing.T, event, action string) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var seen []string
	for {
		select {
		case d := <-r.deliveries:
			var p struct {
				Action string `json:"action"`
			}
			if err := json.Unmarshal(d.body, &p); err != nil {
				t.Fatalf("webhook %s: decoding %s: %v", d.event, d.body, err)
			}
			if d.event == event && p.Action == action {
				return d.body
			}
			seen = append(seen, d.event+"/"+p.Action)
		case <-ctx.Done():
			t.Fatalf("no %s webhook with action %q (saw %v): %v", event, action, seen, ctx.Err())
		}
	}
}

// checkFixture keeps testdata honest: with -update it records raw (the
// server's URL replaced by fixtureURL); otherwise the fixture must have
// exactly the fields, at every depth, that the real server just returned.
func checkFixture(t *testing.T, s *giteatest.Server, file string, raw json.RawMessage) {
	t.Helper()
	p := filepath.Join("testdata", file)
	if *update {
		host := strings.TrimPrefix(s.URL, "http://")
		norm := strings.ReplaceAll(string(raw), s.URL, fixtureURL)
		norm = strings.ReplaceAll(norm, host, strings.TrimPrefix(fixtureURL, "http://"))
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(norm), "", "  "); err != nil {
			t.Fatalf("indenting %s: %v", file, err)
		}
		buf.WriteByte('\n')
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("reading fixture: %v (record it with: go test ./runner/gitea/giteatest -run TestServer -update)", err)
	}
	if diff := cmp.Diff(shape(t, want), shape(t, raw)); diff != "" {
		t.Errorf("%s no longer has the shape Gitea %s returns (-fixture +server):\n%s\nrecord it again with: go test ./runner/gitea/giteatest -run TestServer -update",
			p, giteatest.Version, diff)
	}
}

// shape lists every field path in a JSON document, array elements folded
// into "[]", with the JSON kind of the value found there.
func shape(t *testing.T, doc []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("decoding %s: %v", doc, err)
	}
	set := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			set[prefix+" object"] = true
			for k, e := range v {
				walk(prefix+"."+k, e)
			}
		case []any:
			set[prefix+" array"] = true
			for _, e := range v {
				walk(prefix+"[]", e)
			}
		case nil:
			set[prefix+" null"] = true
		default:
			set[fmt.Sprintf("%s %T", prefix, v)] = true
		}
	}
	walk("", v)
	return slices.Sorted(maps.Keys(set))
}
