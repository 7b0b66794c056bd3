package actrunner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Task is one job of a workflow run as Gitea's API lists it
// (GET /repos/{owner}/{repo}/actions/tasks): it appears once a runner
// has taken the job.
type Task struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"` // the job's name
	HeadBranch string `json:"head_branch"`
	HeadSHA    string `json:"head_sha"` // the commit the run is for
	RunNumber  int64  `json:"run_number"`
	// Event is the workflow trigger that matched (pull_request_target,
	// pull_request_review, …), not the webhook event.
	Event        string `json:"event"`
	DisplayTitle string `json:"display_title"`
	// Status is success, failure, cancelled, skipped, running, waiting or
	// blocked.
	Status     string `json:"status"`
	WorkflowID string `json:"workflow_id"` // the workflow's file name
	URL        string `json:"url"`
}

// Done reports whether the task has reached a final status.
func (t Task) Done() bool {
	switch t.Status {
	case "success", "failure", "cancelled", "skipped":
		return true
	}
	return false
}

func (t Task) String() string {
	return fmt.Sprintf("task %d (run #%d, %s, %s@%.10s): %s", t.ID, t.RunNumber, t.Event, t.HeadBranch, t.HeadSHA, t.Status)
}

// Tasks lists every task of owner/repo, oldest first.
func (r *Runner) Tasks(ctx context.Context, owner, repo string) ([]Task, error) {
	var all []Task
	const limit = 50 // Gitea's MAX_RESPONSE_ITEMS
	for page := 1; ; page++ {
		var res struct {
			Entries []Task `json:"workflow_runs"`
			Total   int    `json:"total_count"`
		}
		p := fmt.Sprintf("/repos/%s/%s/actions/tasks?page=%d&limit=%d", url.PathEscape(owner), url.PathEscape(repo), page, limit)
		if err := r.srv.Do(ctx, r.srv.AdminToken, http.MethodGet, p, nil, &res); err != nil {
			return nil, err
		}
		all = append(all, res.Entries...)
		if len(res.Entries) == 0 || len(all) >= res.Total {
			break
		}
	}
	slices.SortFunc(all, func(a, b Task) int { return int(a.ID - b.ID) })
	return all, nil
}

// Await polls Gitea's task list of owner/repo until cond holds for it
// and returns that list. At the runner's deadline (WithAwait) it fails the
// test with the tasks Gitea listed and what the runner was doing.
func (r *Runner) Await(t testing.TB, owner, repo, what string, cond func([]Task) bool) []Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), r.await)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	var last []Task
	var lastErr error
	for {
		tasks, err := r.Tasks(ctx, owner, repo)
		if err == nil {
			last = tasks
			if cond(tasks) {
				return tasks
			}
		} else if ctx.Err() == nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			var b strings.Builder
			fmt.Fprintf(&b, "actrunner: no %s in %s/%s within %s; the runner is %s", what, owner, repo, r.await, r.state())
			if lastErr != nil {
				fmt.Fprintf(&b, "; listing tasks last failed: %v", lastErr)
			}
			b.WriteString("\ntasks Gitea lists:")
			for _, task := range last {
				b.WriteString("\n  " + task.String())
			}
			if len(last) == 0 {
				b.WriteString(" none")
			}
			t.Fatal(b.String())
			return nil
		case <-ticker.C:
		}
	}
}

// AllDone reports whether every task has reached a final status.
func AllDone(tasks []Task) bool {
	for _, t := range tasks {
		if !t.Done() {
			return false
		}
	}
	return true
}

// Log is the job log Gitea stored for task, read back from the web route
// that downloads it (Gitea 1.23's API has none), one line per row with
// Gitea's timestamps removed. It finds the job within its run by the
// first row the runner wrote, which names the task.
func (r *Runner) Log(t testing.TB, owner, repo string, task Task) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), rpcTimeout)
	defer cancel()
	log, err := r.log(ctx, owner, repo, task)
	if err != nil {
		t.Fatalf("actrunner: reading the log of %s from Gitea: %v\nthe runner sent:\n%s", task, err, r.TaskLog(task.ID))
	}
	return log
}

var errNoJob = errors.New("no such job")

func (r *Runner) log(ctx context.Context, owner, repo string, task Task) (string, error) {
	marker := "received task " + strconv.FormatInt(task.ID, 10) + " "
	for job := 0; ; job++ {
		text, err := r.jobLog(ctx, owner, repo, task.RunNumber, job)
		if errors.Is(err, errNoJob) {
			return "", fmt.Errorf("run #%d has no job whose log names task %d", task.RunNumber, task.ID)
		}
		if err != nil {
			return "", err
		}
		if strings.Contains(text, marker) {
			return text, nil
		}
	}
}

func (r *Runner) jobLog(ctx context.Context, owner, repo string, run int64, job int) (string, error) {
	u := fmt.Sprintf("%s/%s/%s/actions/runs/%d/jobs/%d/logs", r.srv.URL, url.PathEscape(owner), url.PathEscape(repo), run, job)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", u, err)
	}
	switch {
	case res.StatusCode == http.StatusNotFound:
		return "", errNoJob
	case res.StatusCode != http.StatusOK:
		return "", fmt.Errorf("GET %s: status %d", u, res.StatusCode)
	}
	lines := strings.Split(strings.TrimRight(string(body), "\n"), "\n")
	for i, line := range lines {
		if _, content, ok := strings.Cut(line, " "); ok {
			lines[i] = content
		}
	}
	return strings.Join(lines, "\n"), nil
}
