package imagetest

import (
	"testing"
)

// TestGHExpr checks the emulation's expression rules against what GitHub
// documents (docs "Evaluate expressions in workflows and actions"): loose
// equality, case-insensitive strings, value-returning && and ||, null
// for what is missing, and the implicit success() of an `if:`.
func TestGHExpr(t *testing.T) {
	x := &ghExpr{
		contexts: map[string]any{
			"github": map[string]any{"event_name": "issue_comment", "event": map[string]any{
				"issue":   map[string]any{"number": float64(7), "pull_request": map[string]any{"url": "u"}},
				"comment": map[string]any{"body": "/nova approve qa abc"},
			}},
			"needs": map[string]any{"plan-dev": map[string]any{"result": "success", "outputs": map[string]any{"receipt": "", "verdict": "pass"}}},
		},
		status: func(fn string) bool { return fn != "failure" && fn != "cancelled" },
	}
	tests := []struct {
		expr string
		want string
	}{
		{"github.event.pull_request.number || github.event.issue.number", "7"},
		{"github.event.workflow_run.pull_requests[0].number", ""},
		{"format('refs/pull/{0}/head', github.event.issue.number)", "refs/pull/7/head"},
		{"startsWith(github.event.comment.body, '/NOVA ')", "true"},
		{"github.EVENT_NAME == 'Issue_Comment'", "true"},
		{"needs.plan-dev.outputs.receipt == '' && needs.plan-dev.outputs.verdict", "pass"},
		{"contains(fromJSON('[\"qa\",\"prod\"]'), 'prod')", "true"},
		{"!cancelled() && needs.plan-dev.result == 'success'", "true"},
		{"github.event.changes.body.from", ""},
		{"1 == '1'", "true"},
	}
	for _, tt := range tests {
		got, err := x.interpolate("${{ " + tt.expr + " }}")
		if err != nil || got != tt.want {
			t.Errorf("%s = %q, %v; want %q", tt.expr, got, err, tt.want)
		}
	}
	for src, want := range map[string]bool{
		"github.event.issue.pull_request && startsWith(github.event.comment.body, '/nova ')": true,
		"${{ github.event_name == 'push' }}":                                                 false,
		"":                                                                                   true,
	} {
		if got, err := x.condition(src); err != nil || got != want {
			t.Errorf("if %q = %v, %v; want %v", src, got, err, want)
		}
	}
	// Without a status function an `if:` holds only when the jobs before
	// succeeded.
	x.status = func(fn string) bool { return fn == "failure" || fn == "always" }
	if got, _ := x.condition("true"); got {
		t.Error("if true held after a failure")
	}
	if got, _ := x.condition("always() && true"); !got {
		t.Error("if always() did not hold after a failure")
	}
	if _, err := x.eval("toLower('x')"); err == nil {
		t.Error("a function the emulation does not know was evaluated")
	}
}
