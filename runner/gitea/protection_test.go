package gitea

import (
	"net/http"
	"testing"
)

// TestForcePushRefusedOnGitea: on the real server, the evidence branch
// counts as guarded only while a protection rule covers it without
// enabling force-push; a branch the first push will create holds nothing
// to roll back yet.
func TestForcePushRefusedOnGitea(t *testing.T) {
	f := newForge(t)
	s := f.s
	path := "/repos/" + org + "/" + repo + "/branch_protections"
	for _, tt := range []struct {
		name, branch string
		change       func()
		want         bool
	}{
		{"unprotected", "main", nil, false},
		{"protected", "main", func() { s.API(t, s.AdminToken, http.MethodPost, path, map[string]any{"rule_name": "main"}, nil) }, true},
		{"force-push enabled", "main", func() {
			s.API(t, s.AdminToken, http.MethodPatch, path+"/main", map[string]any{"enable_force_push": true}, nil)
		}, false},
		// Nothing to roll back yet: guarded, with a word to protect it.
		{"not created, no rule", "evidence", nil, true},
		{"not created, a rule waits", "evidence", func() { s.API(t, s.AdminToken, http.MethodPost, path, map[string]any{"rule_name": "evidence"}, nil) }, true},
	} {
		if tt.change != nil {
			tt.change()
		}
		refused, why, err := f.c.ForcePushRefused(t.Context(), org, repo, tt.branch)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if refused != tt.want || (!refused && why == "") {
			t.Errorf("%s: refused %v (%q), want %v", tt.name, refused, why, tt.want)
		}
	}
}
