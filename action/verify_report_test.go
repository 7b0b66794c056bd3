package main

import (
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner/evidence/chain"
)

// TestVerifyReportRedactsTheRepoURL: a token given in the repo URL never
// reaches the terminal or a CI log.
func TestVerifyReportRedactsTheRepoURL(t *testing.T) {
	tests := []struct{ name, repo, want string }{
		{"user and token", "https://x-access-token:s3cr3t@forge.example/org/evidence.git", "@forge.example/org/evidence.git"},
		{"token as user", "https://s3cr3t@forge.example/org/evidence.git", "@forge.example/org/evidence.git"},
		{"local path", "/var/lib/nova/evidence.git", "/var/lib/nova/evidence.git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeVerifyReport(&b, &chain.Report{}, tt.repo); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(b.String(), "s3cr3t") || !strings.Contains(b.String(), tt.want) {
				t.Errorf("the report shows the repo as:\n%s\nwant %s", b.String(), tt.want)
			}
		})
	}
}
