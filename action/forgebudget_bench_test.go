package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner/gitea/giteatest"
)

// budgetSizes are the pull requests BenchmarkForgeBudget measures: a
// change to 1, 10, 100 and 1 000 contracts.
var budgetSizes = []int{1, 10, 100, 1000}

// BenchmarkForgeBudget drives the GitHub fake and a real Gitea with a pull
// request changing N contracts, as one job of `nova validate --changed`
// reports them (the job a shard of `nova matrix` runs is the same, over
// its share), and reports what the forge saw: API requests per
// contract-environment (each contract here has one environment, dev),
// 304s among them, comments created and their bytes, and the wall time
// of the selection (`nova matrix --changed`) and of the fan-out (the job
// running and reporting every contract, --parallel on every CPU). Run it
// with -benchtime 1x: a second round would measure a re-run, whose
// writes are skipped.
func BenchmarkForgeBudget(b *testing.B) {
	for _, n := range budgetSizes {
		b.Run(fmt.Sprintf("github-%d", n), func(b *testing.B) {
			m := newMonorepoRun(b)
			api := newGitHubAPI(b)
			pullRequestOf(m, api, n)
			sel, fan := budgetRounds(b, m)
			got := api.budget()
			reportBudget(b, n, got.Requests-got.Limited, got.NotModified, got.Comments, got.CommentBytes, sel, fan)
		})
	}
	for _, n := range budgetSizes {
		b.Run(fmt.Sprintf("gitea-%d", n), func(b *testing.B) {
			s := giteatest.Start(b)
			m := newMonorepoRun(b)
			counter, repoPath, pr := giteaPullRequestOf(m, s, n)
			sel, fan := budgetRounds(b, m)
			total, _ := counter.counts()
			var comments []struct{ Body string }
			s.API(b, s.AdminToken, "GET", fmt.Sprintf("%s/issues/%d/comments?limit=50", repoPath, pr), nil, &comments)
			bytes := 0
			for _, c := range comments {
				bytes += len(c.Body)
			}
			reportBudget(b, n, total, 0, len(comments), bytes, sel, fan)
		})
	}
}

// budgetRounds runs the selection and the job, timing each.
func budgetRounds(b *testing.B, m *monorepoRun) (sel, fan time.Duration) {
	for b.Loop() {
		t0 := time.Now()
		if code, _, stderr := m.nova("matrix", "--changed"); code != ExitPass {
			b.Fatalf("matrix: exit %d\n%s", code, stderr)
		}
		t1 := time.Now()
		code, stdout, stderr := m.nova("validate", "--changed", "--parallel", strconv.Itoa(runtime.NumCPU()))
		if code != ExitPass {
			b.Fatalf("validate: exit %d\n%s\n%s", code, stdout, stderr)
		}
		sel, fan = sel+t1.Sub(t0), fan+time.Since(t1)
	}
	return sel / time.Duration(b.N), fan / time.Duration(b.N)
}

func reportBudget(b *testing.B, n, requests, notModified, comments, commentBytes int, sel, fan time.Duration) {
	b.ReportMetric(float64(requests)/float64(b.N)/float64(n), "calls/contract-env")
	b.ReportMetric(float64(notModified)/float64(b.N), "304s")
	b.ReportMetric(float64(comments), "comments")
	b.ReportMetric(float64(commentBytes), "comment-bytes")
	b.ReportMetric(float64(sel.Milliseconds()), "selection-ms")
	b.ReportMetric(float64(fan.Milliseconds()), "fanout-ms")
}

// BenchmarkFanoutBudget is the reusable fan-out's API budget on the
// GitHub fake: `nova matrix --changed --max-jobs 256` over a pull request
// changing N contracts, each shard job `nova validate --shard … --results`
// (statuses and check runs, no comment; up to 10 contracts, each job its
// contract's comment and no summary job), then the summary job's `nova
// summary --from` (one summary per environment). It reports the requests
// of every job together per contract-environment, and the comments.
func BenchmarkFanoutBudget(b *testing.B) {
	for _, n := range []int{10, 11, 100, 1000} {
		b.Run(fmt.Sprintf("github-%d", n), func(b *testing.B) {
			m := newMonorepoRun(b)
			m.env["PWD"] = m.root
			api := newGitHubAPI(b)
			pullRequestOf(m, api, n)
			for b.Loop() {
				code, stdout, stderr := m.nova("matrix", "--changed", "--max-jobs", "256")
				var mx matrix
				if i := strings.LastIndex(stdout, "\n{"); i >= 0 {
					stdout = stdout[i+1:]
				}
				if err := json.Unmarshal([]byte(stdout), &mx); code != ExitPass || err != nil {
					b.Fatalf("matrix: exit %d %v\n%s", code, err, stderr)
				}
				dir := b.TempDir()
				for i, e := range mx.Include {
					// As fanout.yml runs it: results only when the
					// matrix summarizes the change.
					args := []string{"validate", "--shard", e.Shard, "--parallel", strconv.Itoa(runtime.NumCPU())}
					if e.Summary {
						file := filepath.Join(dir, fmt.Sprintf("nova-results-1-%d", i), "nova-results.json")
						if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
							b.Fatal(err)
						}
						args = append(args, "--results", file)
					}
					if code, stdout, stderr := m.nova(args...); code != ExitPass {
						b.Fatalf("shard %d: exit %d\n%s\n%s", i, code, stdout, stderr)
					}
				}
				if !mx.Include[0].Summary {
					continue
				}
				var stdoutB, stderrB bytes.Buffer
				if code := exitCode(run(b.Context(), Env{Args: []string{"summary", "--from", dir}, Getenv: func(k string) string { return m.env[k] },
					Environ: os.Environ(), Stdout: &stdoutB, Stderr: &stderrB})); code != ExitPass {
					b.Fatalf("summary: exit %d\n%s", code, stderrB.String())
				}
			}
			got := api.budget()
			b.Logf("requests by route: %v", got.ByRoute)
			b.ReportMetric(float64(got.Requests-got.Limited)/float64(b.N)/float64(n), "calls/contract-env")
			b.ReportMetric(float64(got.Comments), "comments")
			b.ReportMetric(float64(got.CommentBytes), "comment-bytes")
		})
	}
}
