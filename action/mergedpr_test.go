package main

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// TestNoRunOnAMergedPullRequest: with apply after merge, a `/nova
// approve` comment on a merged pull request starts the pull request's
// workflow (on GitHub and Gitea alike). Its run (--until-merge) planned
// the head again, applied it in dev over the merge, and put its plan on
// show for the pull request: when the merge workflow then ran again, its
// own plan was new again and the comment, made before, did not count.
// Once the forge says the pull request is merged, the run now passes
// without planning anything; an open pull request's run is unchanged.
func TestNoRunOnAMergedPullRequest(t *testing.T) {
	ctx := t.Context()
	c := newConsumer(t, helloContract("one", "dev"))
	gitCommit(t, c.dir)
	forge := newPullsForge(map[int]string{5: "merged", 6: "open"})
	srv := httptest.NewServer(forge)
	defer srv.Close()
	onPR := func(pr int, audience string) (int, runView, string) {
		t.Helper()
		c.writeContract(helloContract(audience, "dev"))
		forge.mu.Lock()
		forge.self = pr
		forge.mu.Unlock()
		event := filepath.Join(t.TempDir(), "event.json")
		writeFile(t, event, fmt.Sprintf(`{"action": "created", "issue": {"number": %d, "pull_request": {"url": "x"}}, "comment": {"id": 9, "body": "/nova approve qa %064d", "user": {"login": "qa-lead"}}}`, pr, 1))
		env := map[string]string{
			"GITHUB_ACTIONS": "true", "GITHUB_API_URL": srv.URL, "GITHUB_SERVER_URL": "https://github.example.com",
			"GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_NAME": "issue_comment", "GITHUB_EVENT_PATH": event,
			"GITHUB_TOKEN": "ghs_faketoken", "GITHUB_RUN_ID": "7", "GITHUB_ACTOR": "qa-lead",
		}
		for k, v := range c.env {
			env[k] = v
		}
		return novaOnForge(ctx, t, c, env, "run", "--until-merge")
	}

	code, v, stderr := onPR(6, "open")
	if code != ExitPass || stage(v, "apply").Verdict != runner.Pass {
		t.Fatalf("the open pull request's run: exit %d %v\n%s", code, verdicts(v), stderr)
	}
	code, v, stderr = onPR(5, "merged head")
	if code != ExitPass || !slices.Equal(verdicts(v), []string{"schema=pass", "merged=pass"}) || !strings.Contains(stage(v, "merged").Summary, "pull request #5 is merged") {
		t.Fatalf("the merged pull request's run: exit %d %v\n%s", code, verdicts(v), stderr)
	}
	if got := outputValue(t, c.state(ctx, "dev"), "message__text"); got != "Hello, open!" {
		t.Errorf("the merged pull request's run changed dev: %q", got)
	}
}
