package github

import (
	"net/http"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// TestVerifyCommit reads GitHub's verification of a commit, in the shape
// GitHub documents for GET /repos/{owner}/{repo}/commits/{ref}.
func TestVerifyCommit(t *testing.T) {
	for _, tt := range []struct {
		name         string
		status       int
		verification map[string]any
		want         runner.CommitSignature
	}{
		{"verified", 200, map[string]any{"verified": true, "reason": "valid", "signature": "-----BEGIN PGP SIGNATURE-----\n...", "payload": "tree …", "verified_at": "2024-05-02T09:00:00Z"}, runner.CommitVerified},
		{"signed, key unknown to GitHub", 200, map[string]any{"verified": false, "reason": "unknown_key", "signature": "-----BEGIN PGP SIGNATURE-----\n...", "payload": "tree …"}, runner.CommitUnverified},
		{"unsigned", 200, map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil}, runner.CommitUnsigned},
		{"not a commit of the repository", 404, nil, runner.CommitUnknown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			f.handle("GET /repos/octo-org/infra/commits/"+headSHA, func(w http.ResponseWriter, r *http.Request) {
				if tt.status != 200 {
					writeJSON(w, tt.status, fixture(t, "not_found.json"))
					return
				}
				writeJSON(w, 200, map[string]any{
					"sha": headSHA, "node_id": "C_kwDOAAAAAA",
					"commit": map[string]any{
						"author":       map[string]any{"name": "Monalisa", "email": "mona@github.com", "date": "2024-05-02T09:00:00Z"},
						"message":      "Bigger cache",
						"tree":         map[string]any{"sha": "b4eecafa9be2f2006ce1b709d6857b07069b4608"},
						"verification": tt.verification,
					},
					"author": map[string]any{"login": "monalisa", "id": 2},
				})
			})
			got, err := f.client().VerifyCommit(t.Context(), "", headSHA)
			if err != nil || got != tt.want {
				t.Errorf("VerifyCommit = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}
