package workflows

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExposures(t *testing.T) {
	tests := []struct {
		name, dir, workflow string
		want                string // a word of the reason, "" for none
	}{
		{"pull_request with the keys", ".github/workflows", `on: pull_request
jobs:
  plan:
    environment: nova
    steps:
      - uses: nova-platform/nova@v1
        with:
          signing-key: ${{ secrets.NOVA_SIGNING_KEY }}
`, "own copy"},
		{"repository secrets", ".github/workflows", `on: pull_request_target
jobs:
  plan:
    steps:
      - run: nova run
        env:
          NOVA_SIGNING_KEY: ${{ secrets.NOVA_SIGNING_KEY }}
`, "repository or organisation secrets"},
		{"environment secrets, default-branch events", ".github/workflows", `on:
  pull_request_target:
    types: [opened, synchronize]
  issue_comment:
    types: [created]
jobs:
  plan:
    environment: nova
    steps:
      - run: nova run
        env:
          NOVA_SIGNING_KEY: ${{ secrets.NOVA_SIGNING_KEY }}
`, ""},
		{"a dispatch, with environment secrets", ".github/workflows", `on:
  workflow_dispatch:
    inputs:
      change:
        type: string
jobs:
  rollback:
    environment: nova
    steps:
      - uses: nova-platform/nova@v1
        with:
          signing-key: ${{ secrets.NOVA_SIGNING_KEY }}
`, ""},
		{"a dispatch, with repository secrets", ".github/workflows", `on: workflow_dispatch
jobs:
  rollback:
    steps:
      - uses: nova-platform/nova@v1
        with:
          signing-key: ${{ secrets.NOVA_SIGNING_KEY }}
`, "own copy"},
		{"a dispatch beside a push", ".github/workflows", `on: [workflow_dispatch, push]
jobs:
  rollback:
    environment: nova
    steps:
      - uses: nova-platform/nova@v1
        with:
          signing-key: ${{ secrets.NOVA_SIGNING_KEY }}
`, "runs on push,"},
		{"a workflow without Nova's secrets", ".github/workflows", `on: [push, pull_request]
jobs:
  test:
    steps:
      - run: go test ./...
`, ""},
		{"secrets: inherit on push", ".github/workflows", `on:
  push:
    branches: [main, feature/*]
jobs:
  nova:
    uses: nova-platform/nova/.github/workflows/deploy.yml@v1
    secrets: inherit
`, "own copy"},
		{"Gitea on pull_request", ".gitea/workflows", `on:
  pull_request:
  issue_comment:
jobs:
  nova:
    env:
      NOVA_COMMIT_KEY: ${{ secrets.NOVA_COMMIT_KEY }}
    steps:
      - run: nova run
`, "pushed commit's copy"},
		{"Gitea on pull_request_target, reviews and comments", ".gitea/workflows", `on:
  pull_request_target:
  pull_request_review:
  issue_comment:
jobs:
  nova:
    env:
      NOVA_COMMIT_KEY: ${{ secrets.NOVA_COMMIT_KEY }}
    steps:
      - run: nova run
`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, tt.dir), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, tt.dir, "nova.yml"), []byte(tt.workflow), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Exposures(root)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if len(got) != 0 {
					t.Errorf("exposures %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Why, tt.want) || got[0].Line == 0 {
				t.Errorf("exposures %+v, want one saying %q", got, tt.want)
			}
		})
	}
}
