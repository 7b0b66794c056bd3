package main

import (
	"fmt"
	"runtime"
	"strconv"
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
