package gitea

import (
	"errors"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/forgehttp"
)

// TestTrustedBaseOnGitea: on the real server, the approver config is read
// from the default branch, or from the pull request's base only when
// Gitea reports that branch protected. The attack: a pull request opened
// against a branch its author controls, whose approvers.yml adds a
// colleague.
func TestTrustedBaseOnGitea(t *testing.T) {
	f := newForge(t)
	s := f.s
	const path = ".nova/approvers.yml"
	trusted := "groups:\n  qa: {members: [qa-lead]}\n  sre: {members: [sre-oncall]}\n"
	s.CommitFiles(t, org, repo, "main", "main", map[string]string{path: trusted}, f.bot)
	s.CommitFiles(t, org, repo, "mine", "main", map[string]string{path: "groups:\n  qa: {members: [qa-lead, " + f.qa.Name + "]}\n  sre: {members: [sre-oncall, " + f.qa.Name + "]}\n"}, f.author)
	s.CommitFiles(t, org, repo, "release", "main", map[string]string{path: "groups:\n  qa: {members: [release-qa]}\n  sre: {members: [sre-oncall]}\n"}, f.bot)
	s.API(t, s.AdminToken, http.MethodPost, "/repos/"+org+"/"+repo+"/branch_protections", map[string]any{"rule_name": "release"}, nil)
	s.CommitFiles(t, org, repo, "change", "main", map[string]string{"x.tf": "# x\n"}, f.author)

	for _, tt := range []struct {
		base, wantMember, where string
	}{
		{"main", "qa-lead", "main at "},
		{"mine", "qa-lead", "main at "},
		{"release", "release-qa", "release at "},
	} {
		t.Run("pull request against "+tt.base, func(t *testing.T) {
			pr := int64(s.CreatePullRequest(t, org, repo, "change", tt.base, "change against "+tt.base, f.author))
			c, err := New(t.Context(), Config{URL: s.URL, Token: f.bot.Token, Owner: org, Repo: repo, PullRequest: pr, Retry: forgehttp.Policy{Sleep: noWait}})
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := (&runner.ForgeApprovers{Base: c.TrustedBase(), Path: path}).Approvers(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Members("qa"); len(got) != 1 || string(got[0]) != tt.wantMember {
				t.Errorf("qa members %v, want [%s]", got, tt.wantMember)
			}
			_, where, err := c.TrustedBase().TrustedFile(t.Context(), path)
			if err != nil || !strings.HasPrefix(where.String(), tt.where) {
				t.Errorf("read from %q (%v), want %s…", where, err, tt.where)
			}
			if _, _, err := c.TrustedBase().TrustedFile(t.Context(), "svc/"+path); err == nil || !strings.Contains(err.Error(), "not in the trusted base") || !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a file the base does not hold: %v (a missing file is told from a broken one by fs.ErrNotExist)", err)
			}
			// Close it: Gitea allows one open pull request per head and base.
			s.API(t, f.author.Token, http.MethodPatch, "/repos/"+org+"/"+repo+"/pulls/"+strconv.FormatInt(pr, 10), map[string]string{"state": "closed"}, nil)
		})
	}
}
