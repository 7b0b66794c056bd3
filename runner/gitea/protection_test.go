package gitea

import (
	"net/http"
	"strings"
	"testing"
)

// TestForcePushRefusedOnGitea: on the real server, the evidence branch
// counts as guarded only while a protection rule covers it without
// enabling force-push.
func TestForcePushRefusedOnGitea(t *testing.T) {
	f := newForge(t)
	s := f.s
	check := func(want bool) {
		t.Helper()
		refused, why, err := f.c.ForcePushRefused(t.Context(), org, repo, "main")
		if err != nil {
			t.Fatal(err)
		}
		if refused != want || (!refused && why == "") {
			t.Errorf("refused %v (%q), want %v", refused, why, want)
		}
	}
	check(false)
	path := "/repos/" + org + "/" + repo + "/branch_protections"
	s.API(t, s.AdminToken, http.MethodPost, path, map[string]any{"rule_name": "main"}, nil)
	check(true)
	s.API(t, s.AdminToken, http.MethodPatch, path+"/main", map[string]any{"enable_force_push": true}, nil)
	check(false)
	// A branch that does not exist yet holds nothing to roll back; the
	// first push creates it, and the answer says to protect it.
	refused, why, err := f.c.ForcePushRefused(t.Context(), org, repo, "evidence-to-be")
	if err != nil || !refused || !strings.Contains(why, "does not exist yet") {
		t.Errorf("a missing branch: refused %v (%q), %v", refused, why, err)
	}
}
