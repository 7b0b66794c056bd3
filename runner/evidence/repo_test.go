package evidence

import (
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
)

// TestOpenRepoBranch: verify reads exactly the branch it is given. A
// branch the repo lacks is an error naming it, not a fallback to HEAD or
// an empty head that would verify as "OK, 0 events"; only a repo with no
// branch at all (nothing recorded yet) opens with an empty head.
func TestOpenRepoBranch(t *testing.T) {
	written := newBareRepo(t)
	emitN(t, openStore(t, written, newKeys(t)), "c-1", 1)
	empty := newBareRepo(t)
	tests := []struct {
		name, repo, branch string
		wantHead           bool
		wantErr            string // "" for success
	}{
		{"the branch", written, "main", true, ""},
		{"default branch", written, "", true, ""},
		{"missing branch", written, "evidence", false, `no branch "evidence"`},
		{"missing branch over file://", "file://" + written, "evidence", false, `no branch "evidence"`},
		{"empty repo, default branch", empty, "main", false, ""},
		{"empty repo, another branch", empty, "evidence", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := chain.OpenRepo(t.Context(), tt.repo, tt.branch, chain.Credentials{})
			if tt.wantErr != "" {
				if runner.ReasonOf(err) != runner.EvidenceRepoUnavailable || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("chain.OpenRepo(%s) = %v; want %s naming %s", tt.branch, err, runner.EvidenceRepoUnavailable, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got := r.Head() != ""; got != tt.wantHead {
				t.Errorf("head = %q, want a commit: %v", r.Head(), tt.wantHead)
			}
		})
	}
}
