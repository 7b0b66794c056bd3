package github

import (
	"net/http"
	"testing"
)

// TestForcePushRefused: the evidence branch counts as guarded only when
// GitHub refuses force pushes to it: a ruleset blocking non-fast-forward
// pushes, or classic protection that does not allow them.
func TestForcePushRefused(t *testing.T) {
	t.Run("a branch that does not exist yet", func(t *testing.T) {
		f := newFakeGitHub(t)
		f.handle("GET /repos/acme/evidence/rules/branches/main", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`[]`))
		})
		f.handle("GET /repos/acme/evidence/branches/main", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 404, fixture(t, "not_found.json"))
		})
		refused, why, err := f.client().ForcePushRefused(t.Context(), "acme", "evidence", "main")
		if err != nil || !refused || why == "" {
			t.Errorf("refused %v (%q), %v", refused, why, err)
		}
	})
	for _, tt := range []struct {
		name       string
		rules      string
		protected  bool
		protection int // status of GET …/protection
		forcePush  bool
		refused    bool
		// missing: the branch does not exist yet (no event was pushed).
		missing bool
	}{
		{"a ruleset blocks non-fast-forward pushes", `[{"type":"non_fast_forward","ruleset_source_type":"Repository","ruleset_source":"acme/evidence","ruleset_id":42}]`, false, 404, false, true, false},
		{"classic protection", `[]`, true, 200, false, true, false},
		{"classic protection allowing force pushes", `[]`, true, 200, true, false, false},
		{"classic protection the token may not read", `[]`, true, 403, false, true, false},
		{"no protection", `[{"type":"deletion","ruleset_source_type":"Repository","ruleset_source":"acme/evidence","ruleset_id":42}]`, false, 404, false, false, false},
		{"not created, a ruleset waits", `[{"type":"non_fast_forward","ruleset_source_type":"Repository","ruleset_source":"acme/evidence","ruleset_id":42}]`, false, 404, false, true, true},
		{"not created, no ruleset: nothing to roll back yet", `[]`, false, 404, false, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			f.handle("GET /repos/acme/evidence/rules/branches/main", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(tt.rules))
			})
			f.handle("GET /repos/acme/evidence/branches/main", func(w http.ResponseWriter, r *http.Request) {
				if tt.missing {
					writeJSON(w, 404, map[string]any{"message": "Branch not found", "documentation_url": "https://docs.github.com/rest/branches/branches#get-a-branch", "status": "404"})
					return
				}
				writeJSON(w, 200, fixtureWith(t, "branch.json", func(m map[string]any) { m["protected"] = tt.protected }))
			})
			f.handle("GET /repos/acme/evidence/branches/main/protection", func(w http.ResponseWriter, r *http.Request) {
				if tt.protection != 200 {
					writeJSON(w, tt.protection, fixture(t, "not_found.json"))
					return
				}
				writeJSON(w, 200, map[string]any{
					"url":                "https://api.github.com/repos/acme/evidence/branches/main/protection",
					"allow_force_pushes": map[string]any{"enabled": tt.forcePush},
					"allow_deletions":    map[string]any{"enabled": false},
					"enforce_admins":     map[string]any{"url": "https://api.github.com/repos/acme/evidence/branches/main/protection/enforce_admins", "enabled": true},
				})
			})
			refused, why, err := f.client().ForcePushRefused(t.Context(), "acme", "evidence", "main")
			if err != nil {
				t.Fatal(err)
			}
			if refused != tt.refused || (!refused && why == "") {
				t.Errorf("refused %v (%q), want %v", refused, why, tt.refused)
			}
		})
	}
}
