package github

import (
	"encoding/base64"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// TestTrustedBase: the approver config is read from the default branch,
// or from the pull request's base only when GitHub reports that branch
// protected, at the commit GitHub says the branch is at. The attack: a
// pull request opened against a branch its author controls, whose
// approvers.yml adds a colleague.
func TestTrustedBase(t *testing.T) {
	const (
		mainSHA    = "c5b97d5ae6c19d5c5df71a34c7fbeeda2479ccbc"
		mineSHA    = "1111111111111111111111111111111111111111"
		releaseSHA = "2222222222222222222222222222222222222222"
	)
	branches := map[string]struct {
		sha       string
		protected bool
	}{"main": {mainSHA, true}, "mallory-base": {mineSHA, false}, "release": {releaseSHA, true}}
	files := map[string]string{
		mainSHA:    "groups:\n  qa: {members: [qa-lead]}\n  sre: {members: [sre-oncall]}\n",
		mineSHA:    "groups:\n  qa: {members: [qa-lead, mallory-friend]}\n  sre: {members: [sre-oncall, mallory-friend]}\n",
		releaseSHA: "groups:\n  qa: {members: [release-qa]}\n  sre: {members: [sre-oncall]}\n",
	}
	for _, tt := range []struct {
		base, want, where string
	}{
		{"main", files[mainSHA], "main at c5b97d5ae6c1"},
		{"mallory-base", files[mainSHA], "main at c5b97d5ae6c1"},
		{"release", files[releaseSHA], "release at 222222222222"},
	} {
		t.Run("pull request against "+tt.base, func(t *testing.T) {
			f := newFakeGitHub(t)
			f.handle("GET /repos/octo-org/infra", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, fixture(t, "repo.json"))
			})
			f.handle("GET /repos/octo-org/infra/pulls/7", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, fixtureWith(t, "pull.json", func(p map[string]any) {
					p["base"].(map[string]any)["ref"] = tt.base
					p["base"].(map[string]any)["sha"] = branches[tt.base].sha
				}))
			})
			f.handle("GET /repos/octo-org/infra/branches/{branch}", func(w http.ResponseWriter, r *http.Request) {
				b, ok := branches[r.PathValue("branch")]
				if !ok {
					writeJSON(w, 404, fixture(t, "not_found.json"))
					return
				}
				writeJSON(w, 200, fixtureWith(t, "branch.json", func(m map[string]any) {
					m["name"], m["protected"] = r.PathValue("branch"), b.protected
					m["commit"].(map[string]any)["sha"] = b.sha
				}))
			})
			f.handle("GET /repos/octo-org/infra/contents/{path...}", func(w http.ResponseWriter, r *http.Request) {
				text, ok := files[r.URL.Query().Get("ref")]
				if r.PathValue("path") != ".nova/approvers.yml" || !ok {
					writeJSON(w, 404, fixture(t, "not_found.json"))
					return
				}
				writeJSON(w, 200, fixtureWith(t, "content.json", func(m map[string]any) {
					m["content"], m["size"] = base64.StdEncoding.EncodeToString([]byte(text)), len(text)
				}))
			})
			data, where, err := f.client().TrustedBase().TrustedFile(t.Context(), ".nova/approvers.yml")
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != tt.want || where.String() != tt.where {
				t.Errorf("read %q from %s, want %q from %s", data, where, tt.want, tt.where)
			}
			cfg, err := (&runner.ForgeApprovers{Base: f.client().TrustedBase(), Path: ".nova/approvers.yml"}).Approvers(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Members("sre"); strings.Contains(string(data), "mallory") || len(got) != 1 {
				t.Errorf("sre members %v", got)
			}
			_, _, err = f.client().TrustedBase().TrustedFile(t.Context(), "svc/.nova/approvers.yml")
			if err == nil || !strings.Contains(err.Error(), "not in the trusted base") || !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a file the base does not hold: %v (a missing file is told from a broken one by fs.ErrNotExist)", err)
			}
		})
	}
}
