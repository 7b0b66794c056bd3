package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// githubMaxJobs is the most jobs GitHub expands a matrix into; it refuses
// the workflow run past it.
const githubMaxJobs = 256

// shardStacks are the stacks the generated contracts cycle through, with
// the modules each resolves to in the built-in registry: the weights the
// shards are balanced by. A stack the registry does not know costs one.
var shardStacks = []struct {
	name    string
	modules int
}{{"hello", 2}, {"microservice", 3}, {"hello", 2}, {"no-such-stack", 1}}

// matrixDoc runs nova matrix and decodes its matrix.
func (m *monorepoRun) matrixDoc(args ...string) (matrix, string) {
	m.t.Helper()
	code, stdout, stderr := m.nova(append([]string{"matrix"}, args...)...)
	var mx matrix
	if err := json.Unmarshal([]byte(stdout), &mx); code != ExitPass || err != nil {
		m.t.Fatalf("nova matrix %v: exit %d, %v\n%s\n%s", args, code, err, stdout, stderr)
	}
	return mx, stdout
}

// TestMatrixShardsAThousandContractChange: a change to 1 000 contracts
// that also deletes 8 renders a matrix GitHub accepts, at most 256 jobs,
// in which every contract and every destroy is in exactly one shard, the
// shards balanced by the modules their contracts resolve to; the same
// change always renders the same matrix; and where the selection fits in
// --max-jobs the matrix is one contract per job, as before sharding.
func TestMatrixShardsAThousandContractChange(t *testing.T) {
	const n, deleted = 1000, 8
	m := newMonorepoRun(t)
	m.env["PWD"] = m.root
	weightOf := map[string]int{}
	write := func(i int, audience string) {
		s := shardStacks[i%len(shardStacks)]
		rel := fmt.Sprintf("svc/%04d/.nova/contract.yml", i)
		writeFile(t, filepath.Join(m.root, filepath.FromSlash(rel)), fmt.Sprintf("apiVersion: nova/v1\nid: 00000000-0000-4000-8000-%012d\nstack: %s\nenvironment: dev\ninputs:\n  audience: %q\n", i, s.name, audience))
		weightOf[rel] = s.modules
	}
	for i := range n + deleted {
		write(i, "before")
	}
	base := m.commit("base")
	for i := range n {
		write(i, "after")
	}
	for i := n; i < n+deleted; i++ {
		if err := os.RemoveAll(filepath.Join(m.root, "svc", fmt.Sprintf("%04d", i))); err != nil {
			t.Fatal(err)
		}
	}
	head := m.commit("a change to every contract")

	mx, doc := m.matrixDoc("--changed", "--base", base, "--head", head)
	if len(mx.Include) != githubMaxJobs {
		t.Fatalf("%d jobs for %d contracts and %d destroys, want %d", len(mx.Include), n, deleted, githubMaxJobs)
	}
	// A job's outputs are at most 1 MB on GitHub.
	if len(doc) >= 1<<20 {
		t.Errorf("the matrix is %d bytes: too large for a job output", len(doc))
	}
	seen := map[string]int{}
	maxWeight, minLoad, maxLoad := 0, int(^uint(0)>>1), 0
	for _, w := range weightOf {
		maxWeight = max(maxWeight, w)
	}
	for _, e := range mx.Include {
		members, err := parseShard(e.Shard)
		if err != nil {
			t.Fatalf("entry %s: its shard is not one --shard takes: %v", e.Name, err)
		}
		if e.Dir != "" || e.Contract != "" || e.Operation != "" || e.Contracts != len(members) {
			t.Errorf("shard entry %+v: want only a name, a shard and its size (%d)", e, len(members))
		}
		load := 0
		for _, mem := range members {
			seen[mem.Path]++
			load += weightOf[mem.Path]
			if gone := strings.Compare(mem.Path, fmt.Sprintf("svc/%04d", n)) > 0; gone != (mem.Operation == operationDestroy) || (gone && mem.ID == "") {
				t.Errorf("%s: operation %q, id %q; only the deleted contracts are destroys, by id", mem.Path, mem.Operation, mem.ID)
			}
		}
		if load != e.Weight {
			t.Errorf("entry %s: weight %d, its contracts resolve to %d modules", e.Name, e.Weight, load)
		}
		minLoad, maxLoad = min(minLoad, load), max(maxLoad, load)
	}
	// Sharded: every job leaves the comments to the summary job.
	for _, e := range mx.Include {
		if !e.Summary {
			t.Fatalf("shard entry %s: summary false, want true (the fan-out posts one summary per environment)", e.Name)
		}
	}
	for p := range weightOf {
		if seen[p] != 1 {
			t.Errorf("%s is in %d shards, want exactly one", p, seen[p])
		}
	}
	if len(seen) != len(weightOf) {
		t.Errorf("the shards hold %d contracts, want %d", len(seen), len(weightOf))
	}
	// Greedy longest-processing-time: the heaviest and lightest shards
	// differ by at most the heaviest contract.
	if maxLoad-minLoad > maxWeight {
		t.Errorf("shards weigh %d to %d modules: unbalanced by more than the heaviest contract (%d)", minLoad, maxLoad, maxWeight)
	}
	if _, again := m.matrixDoc("--changed", "--base", base, "--head", head); again != doc {
		t.Error("the same change rendered another matrix")
	}
	// The selection the summary job reads is that matrix, every contract
	// and destroy of it.
	selFile := filepath.Join(t.TempDir(), "nova-selection.json")
	m.matrixDoc("--changed", "--base", base, "--head", head, "--selection", selFile)
	if b, err := os.ReadFile(selFile); err != nil || string(b)+"\n" != doc {
		t.Errorf("--selection wrote %d bytes (%v), not the matrix", len(b), err)
	}
	if sel, err := readSelection(selFile); err != nil || len(sel) != n+deleted {
		t.Errorf("the selection holds %d contracts (%v), want %d", len(sel), err, n+deleted)
	}

	// --max-jobs is the bound, whatever it is.
	if mx, _ := m.matrixDoc("--changed", "--base", base, "--head", head, "--max-jobs", "7"); len(mx.Include) != 7 {
		t.Errorf("--max-jobs 7: %d jobs", len(mx.Include))
	}
	// Within the bound: one contract per job, as before sharding.
	mx, _ = m.matrixDoc("--changed", "--base", base, "--head", head, "--max-jobs", "2000")
	if len(mx.Include) != n+deleted {
		t.Fatalf("--max-jobs 2000: %d jobs, want one per contract (%d)", len(mx.Include), n+deleted)
	}
	first, last := mx.Include[0], mx.Include[len(mx.Include)-1]
	want := matrixEntry{Name: "svc/0000/.nova/contract.yml", Dir: "svc/0000", Contract: ".nova/contract.yml", ID: "00000000-0000-4000-8000-000000000000", Environment: "dev",
		Shard: `[{"path":"svc/0000/.nova/contract.yml","id":"00000000-0000-4000-8000-000000000000"}]`, Summary: true}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("a contract's entry (-want +got):\n%s", diff)
	}
	gone := fmt.Sprintf("svc/%04d", n+deleted-1)
	if last.Operation != operationDestroy || last.Dir != gone || last.Name != "destroy "+gone+"/.nova/contract.yml" {
		t.Errorf("a deleted contract's entry: %+v, want its destroy", last)
	}

	for _, bad := range [][]string{{"--max-jobs", "0"}, {"--max-jobs", "-3"}} {
		if code, _, stderr := m.nova(append([]string{"matrix", "--all"}, bad...)...); code != ExitError || !strings.Contains(stderr, string(runner.ConfigInvalid)) {
			t.Errorf("matrix %v: exit %d, %s", bad, code, stderr)
		}
	}
}

// TestPackShards checks the packing on its own: every item in one shard,
// no shard empty, at most k shards, balance within the heaviest item,
// and the same shards whatever order the items come in.
func TestPackShards(t *testing.T) {
	var items []weighted
	for i := range 97 {
		items = append(items, weighted{member: shardMember{Path: fmt.Sprintf("s/%03d/.nova/contract.yml", i)}, weight: 1 + (i*7)%5})
	}
	for _, k := range []int{1, 2, 10, 96, 97, 200} {
		shards := packShards(items, k)
		if len(shards) != min(k, len(items)) {
			t.Errorf("k=%d: %d shards", k, len(shards))
		}
		seen := map[string]bool{}
		lo, hi := 1<<30, 0
		for _, s := range shards {
			if len(s.members) == 0 {
				t.Errorf("k=%d: an empty shard", k)
			}
			load := 0
			for _, m := range s.members {
				if seen[m.member.Path] {
					t.Errorf("k=%d: %s twice", k, m.member.Path)
				}
				seen[m.member.Path] = true
				load += m.weight
			}
			if load != s.load {
				t.Errorf("k=%d: load %d, members weigh %d", k, s.load, load)
			}
			lo, hi = min(lo, load), max(hi, load)
		}
		if len(seen) != len(items) || hi-lo > 5 {
			t.Errorf("k=%d: %d of %d items, loads %d..%d", k, len(seen), len(items), lo, hi)
		}
		reversed := slices.Clone(items)
		slices.Reverse(reversed)
		if diff := cmp.Diff(shardPaths(shards), shardPaths(packShards(reversed, k))); diff != "" {
			t.Errorf("k=%d: another order of the same items packs other shards:\n%s", k, diff)
		}
	}
}

func shardPaths(shards []*shard) [][]string {
	var out [][]string
	for _, s := range shards {
		var ps []string
		for _, m := range s.members {
			ps = append(ps, m.member.Path)
		}
		out = append(out, ps)
	}
	return out
}

// TestShardJobRunsItsContracts: the job of a shard runs the contracts its
// shard lists, and only those, with real Terraform, and exits as `nova
// run --changed` over them would: the worst contract's code. A change
// edits a, adds a contract policy blocks and deletes b, which ran in dev;
// packed into one shard, the job applies a, fails the blocked contract and
// destroys b from the trusted base (dev is autonomous): exit 1. Fanned out
// one contract per job, each job exits with its own contract's code.
func TestShardJobRunsItsContracts(t *testing.T) {
	m := newMonorepoRun(t)
	m.env["PWD"] = m.root
	m.contract("svc/a/.nova/contract.yml", idA, "alpha")
	m.contract("svc/b/.nova/contract.yml", idB, "bravo")
	m.contract("svc/c/.nova/contract.yml", idC, "charlie")
	if code, mv, stderr := m.many("run", "--all"); code != ExitPass {
		t.Fatalf("run --all: exit %d %+v\n%s", code, outcomes(mv), stderr)
	}
	base := m.commit("base")
	m.contract("svc/a/.nova/contract.yml", idA, "alpha, again")
	m.contract("svc/bad/.nova/contract.yml", idBad, "password=hunter2hunter2")
	if err := os.RemoveAll(filepath.Join(m.root, "svc", "b")); err != nil {
		t.Fatal(err)
	}
	head := m.commit("change a, add bad, delete b")

	mx, _ := m.matrixDoc("--changed", "--base", base, "--head", head, "--max-jobs", "1")
	if len(mx.Include) != 1 || mx.Include[0].Contracts != 3 || !mx.Include[0].Summary {
		t.Fatalf("--max-jobs 1: %+v, want one shard of a, bad and b's destroy", mx.Include)
	}
	code, mv, stderr := m.many("run", "--shard", mx.Include[0].Shard, "--base", base)
	want := map[string]string{
		"svc/a/.nova/contract.yml":   "pass ",
		"svc/b/.nova/contract.yml":   "pass ",
		"svc/bad/.nova/contract.yml": "fail " + string(runner.PolicyCriticalFail),
	}
	if diff := cmp.Diff(want, outcomes(mv)); diff != "" || code != ExitFail || mv.Reason != string(runner.PolicyCriticalFail) || mv.Selection != "shard" {
		t.Fatalf("the shard's job: exit %d, selection %s, reason %s (-want +got):\n%s\nstderr:\n%s", code, mv.Selection, mv.Reason, diff, stderr)
	}
	for _, c := range mv.Contracts {
		switch c.ContractID {
		case idA:
			if got := outputValue(t, m.state(idA), "message__text"); !strings.Contains(got, "alpha, again") {
				t.Errorf("a's applied message__text = %q", got)
			}
		case idB:
			if stage(c.runView, "apply").Verdict != runner.Pass || !strings.HasPrefix(stage(c.runView, "plan").Summary, "destroy plan") {
				t.Errorf("b's run is not its destroy: %v", verdicts(c.runView))
			}
			if _, err := os.Stat(filepath.Join(m.stateDir, idB, "dev", "terraform.tfstate")); !os.IsNotExist(err) {
				t.Errorf("b's dev state is still there after its destroy (%v)", err)
			}
		}
	}
	if code, stdout, stderr := m.nova("evidence", "verify"); code != ExitPass {
		t.Errorf("evidence verify: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// One contract per job: each job's code is its contract's.
	mx, _ = m.matrixDoc("--changed", "--base", base, "--head", head)
	codes := map[string]int{}
	for _, e := range mx.Include {
		if e.Summary {
			t.Errorf("%s: summary true for a change of three contracts, one a job: want each its own comments", e.Name)
		}
		code, mv, stderr := m.many("run", "--shard", e.Shard, "--base", base)
		if len(mv.Contracts) != 1 || path.Join(mv.Contracts[0].Dir, mv.Contracts[0].Contract) != path.Join(e.Dir, e.Contract) {
			t.Errorf("the job of %s ran %+v\n%s", e.Name, outcomes(mv), stderr)
		}
		codes[e.Name] = code
	}
	wantCodes := map[string]int{"svc/a/.nova/contract.yml": ExitPass, "svc/bad/.nova/contract.yml": ExitFail, "destroy svc/b/.nova/contract.yml": ExitPass}
	if diff := cmp.Diff(wantCodes, codes); diff != "" {
		t.Errorf("exit codes of the one-contract jobs (-want +got):\n%s", diff)
	}

	// A shard nova matrix would not write runs nothing.
	for _, bad := range []string{
		`not json`, `[]`, `[{"path":"../x/.nova/contract.yml"}]`, `[{"path":"/etc/.nova/contract.yml"}]`,
		`[{"path":"svc/a/contract.yml"}]`, `[{"path":"svc/a/.nova/contract.yml"},{"path":"svc/a/.nova/contract.yml"}]`,
		`[{"path":"svc/b/.nova/contract.yml","operation":"destroy"}]`, `[{"path":"svc/a/.nova/contract.yml","operation":"apply"}]`,
		`[{"path":"svc/a/.nova/contract.yml","what":1}]`,
	} {
		if code, _, stderr := m.nova("run", "--shard", bad); code != ExitError || !strings.Contains(stderr, string(runner.ShardInvalid)) {
			t.Errorf("--shard %s: exit %d, want %d %s\n%s", bad, code, ExitError, runner.ShardInvalid, stderr)
		}
	}
	if code, _, stderr := m.nova("run", "--all", "--shard", mx.Include[0].Shard); code != ExitError || !strings.Contains(stderr, string(runner.ConfigInvalid)) {
		t.Errorf("--all with --shard: exit %d\n%s", code, stderr)
	}
}

// TestShardDestroysDownTheOrder: the job of a shard that holds a deleted
// contract's destroy, once examples/hello ran in dev and qa, destroys qa
// (approved by qa's group), and in the same job goes on to dev, whose
// destroy needs no approval, as the per-contract workflows' destroy jobs
// chain: nothing else would start dev's. Then nothing is left, and the
// job says so.
func TestShardDestroysDownTheOrder(t *testing.T) {
	ctx := t.Context()
	c := newHelloConsumer(t, runner.EngineTerraform)
	c.extra = []string{"--trusted-keys", signedCheckout(t, c.dir)}
	repo, err := git.PlainOpen(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	base := head.Hash().String()
	c.env["PWD"] = c.dir
	nova := func(wantCode int, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args = append([]string{args[0], "--dir", c.dir}, args[1:]...)
		if args[0] == "run" {
			args = append(args, c.extra...)
		}
		code := exitCode(run(ctx, Env{Args: args, Getenv: func(k string) string { return c.env[k] }, Environ: os.Environ(), Stdout: &stdout, Stderr: &stderr}))
		if code != wantCode {
			t.Fatalf("nova %s: exit %d, want %d\n%s\n%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	c.step(ExitPass, "", "run")
	c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--env", "qa")
	nova(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
	c.step(ExitPass, "", "apply", "--env", "qa")
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Remove(".nova/contract.yml"); err != nil {
		t.Fatal(err)
	}
	after, err := wt.Commit("retire hello", &git.CommitOptions{Author: &object.Signature{Name: "consumer", Email: "consumer@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}

	var mx matrix
	if err := json.Unmarshal([]byte(nova(ExitPass, "matrix", "--changed", "--base", base, "--head", after.String())), &mx); err != nil || len(mx.Include) != 1 || mx.Include[0].Operation != operationDestroy {
		t.Fatalf("the matrix of the deletion: %+v (%v)", mx, err)
	}
	shardRun := func(wantCode int) manyView {
		t.Helper()
		var mv manyView
		out := nova(wantCode, "run", "--shard", mx.Include[0].Shard, "--base", base, "--state-dir", c.stateDir, "--output", "json")
		if err := json.Unmarshal([]byte(out), &mv); err != nil {
			t.Fatalf("not one JSON document: %v\n%s", err, out)
		}
		return mv
	}
	envs := func(mv manyView) []string {
		var out []string
		for _, c := range mv.Contracts {
			out = append(out, c.Environment+" "+c.Verdict+" apply="+string(stage(c.runView, "apply").Verdict))
		}
		return out
	}
	if mv := shardRun(ExitAwaitingApproval); !slices.Equal(envs(mv), []string{"qa awaiting_approval apply="}) {
		t.Fatalf("the first job: %v, want qa's destroy waiting for its approval", envs(mv))
	}
	nova(ExitPass, "approve", "--env", "qa", "--as", "qa-lead", "--base", base)
	if mv := shardRun(ExitPass); !slices.Equal(envs(mv), []string{"qa pass apply=pass", "dev pass apply=pass"}) {
		t.Fatalf("the job after the approval: %v, want qa's destroy, then dev's", envs(mv))
	}
	for _, env := range []string{"qa", "dev"} {
		if _, err := os.Stat(filepath.Join(c.stateDir, "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90", env, "terraform.tfstate")); !os.IsNotExist(err) {
			t.Errorf("%s's state is still there after its destroy (%v)", env, err)
		}
	}
	if mv := shardRun(ExitPass); len(mv.Contracts) != 1 || !strings.Contains(stage(mv.Contracts[0].runView, "change").Summary, "nothing to destroy") {
		t.Fatalf("the job once nothing is left: %v", envs(mv))
	}
	var stdout, stderr bytes.Buffer
	if code := exitCode(run(ctx, Env{Args: []string{"evidence", "verify"}, Getenv: func(k string) string { return c.env[k] }, Environ: os.Environ(), Stdout: &stdout, Stderr: &stderr})); code != ExitPass {
		t.Errorf("evidence verify: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
}
