package main

import "testing"

func TestForgeRepoOf(t *testing.T) {
	for _, tt := range []struct {
		url, server, owner, repo string
		ok                       bool
	}{
		{"https://github.com/acme/evidence.git", "https://github.com", "acme", "evidence", true},
		{"https://github.com/acme/evidence", "https://github.com/", "acme", "evidence", true},
		{"https://x-access-token:t@github.com/acme/evidence.git", "https://github.com", "acme", "evidence", true},
		{"http://127.0.0.1:3000/git/acme/evidence.git", "http://127.0.0.1:3000/git", "acme", "evidence", true},
		{"https://gitea.example.com/acme/evidence.git", "https://github.com", "", "", false},
		{"https://github.com/acme/group/evidence.git", "https://github.com", "", "", false},
		{"/var/lib/evidence.git", "https://github.com", "", "", false},
	} {
		owner, repo, ok := forgeRepoOf(tt.url, tt.server)
		if owner != tt.owner || repo != tt.repo || ok != tt.ok {
			t.Errorf("forgeRepoOf(%q, %q) = %q, %q, %v", tt.url, tt.server, owner, repo, ok)
		}
	}
}
