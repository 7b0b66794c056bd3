package github

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nova-platform/nova/runner"
)

// TestCheckRunSummaryTooLongIsCut: a report longer than a check run's
// summary may hold is cut to GitHub's 65 535 characters, ending with a
// link to the run's artifacts, and the check run is created, not refused.
func TestCheckRunSummaryTooLongIsCut(t *testing.T) {
	f := newFakeGitHub(t)
	var got struct {
		Name, Conclusion string
		DetailsURL       string `json:"details_url"`
		Output           struct{ Title, Summary string }
	}
	f.handle("POST /repos/octo-org/infra/check-runs", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &got)
		if utf8.RuneCountInString(got.Output.Summary) > MaxCheckRunSummary {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Invalid request.\n\nOnly 65535 characters are allowed."})
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{"id": 1})
	})
	run := "https://github.com/octo-org/infra/actions/runs/1"
	err := f.client().CheckRuns().ReportCheckRun(t.Context(), headSHA, runner.CheckRun{
		Name: "nova/c1/prod", State: runner.StatePending, Title: "nova plan: pass (not applied yet)",
		Summary: strings.Repeat("| `aws_instance.x` | create |\n", 5000), DetailsURL: run,
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(got.Output.Summary); n != MaxCheckRunSummary {
		t.Errorf("summary of %d characters, want it cut to %d", n, MaxCheckRunSummary)
	}
	if !strings.HasSuffix(got.Output.Summary, "[workflow run's artifacts]("+run+").*\n") {
		t.Errorf("the cut summary does not end with the run's link: %q", got.Output.Summary[len(got.Output.Summary)-200:])
	}
	if got.Conclusion != "action_required" || got.DetailsURL != run || got.Name != "nova/c1/prod" {
		t.Errorf("check run %+v", got)
	}
}

// TestCheckRunsRefusedAreAskedOnce: a token without checks: write is
// refused the first check run, and the job asks for no more.
func TestCheckRunsRefusedAreAskedOnce(t *testing.T) {
	f := newFakeGitHub(t)
	f.handle("POST /repos/octo-org/infra/check-runs", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration"})
	})
	cr := f.client().CheckRuns()
	for i := range 3 {
		err := cr.ReportCheckRun(t.Context(), headSHA, runner.CheckRun{Name: "nova/c1/prod", State: runner.StateSuccess, Summary: "ok"})
		if err == nil || (i > 0 && !errors.Is(err, ErrCheckRunsRefused)) {
			t.Errorf("check run %d: %v", i+1, err)
		}
	}
	if n := len(writes(f)); n != 1 {
		t.Errorf("%d requests for check runs, want the one refused", n)
	}
}
