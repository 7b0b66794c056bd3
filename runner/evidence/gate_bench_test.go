package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// BenchmarkGateHistory measures the gate decision of a process that has
// just started — a fresh store on the repo, its state dir as an earlier
// run left it (the witness of the head, the chain it verified) — on a contract with 10 past
// events and on one with 10 000, same shape (runs of plan, authorization,
// completion in dev). The guard: the 10 000 side within 1.2× of the 10
// side. Both sides alternate in every round, so load hits both; the
// fixtures are built once per test binary and not timed.
func BenchmarkGateHistory(b *testing.B) { benchmarkGateHistory(b, false) }

// BenchmarkGateHistoryPending is BenchmarkGateHistory with an event of the
// run still in the outbox when the gate asks, as in a run: the approvals
// stage's record is pushed with the authorization, not before.
func BenchmarkGateHistoryPending(b *testing.B) { benchmarkGateHistory(b, true) }

// BenchmarkGateWide is BenchmarkGateHistoryPending across a repo: a
// contract of 10 past events in a repo holding 10 other contracts and in
// one holding 10 000.
func BenchmarkGateWide(b *testing.B) {
	gateRounds(b, true, historyFixtureAmong(b, "gate", 10, 10, gateShape), historyFixtureAmong(b, "gate", 10, 10_000, gateShape))
}

func benchmarkGateHistory(b *testing.B, pending bool) {
	gateRounds(b, pending, gateHistoryFixture(b, 10), gateHistoryFixture(b, 10_000))
}

// gateRounds times the gate on small and on large, alternating, and
// reports each side's median: a decision takes about a millisecond, so
// one stall of a busy neighbour's would outweigh a hundred of them in a
// mean.
func gateRounds(b *testing.B, pending bool, small, large *gateHistory) {
	ctx := context.Background()
	var took [2][]time.Duration
	for b.Loop() {
		for i, f := range []*gateHistory{small, large} {
			took[i] = append(took[i], f.decide(ctx, b, pending))
		}
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	m10, m10000 := median(took[0]), median(took[1])
	b.ReportMetric(float64(m10.Microseconds()), "µs/gate-10")
	b.ReportMetric(float64(m10000.Microseconds()), "µs/gate-10000")
	b.ReportMetric(float64(m10000)/float64(m10), "ratio")
}

// BenchmarkRunEndHistory measures what the end of a run costs a process
// that has just started (the state dir as an earlier run left it, the
// run's decision still in the outbox): runner.RecordDecisionOutcomes, on
// a contract with 10 past events and on one with 10 000, runs of a
// decision, plan, authorization, completion and the decision's outcome.
func BenchmarkRunEndHistory(b *testing.B) {
	small, large := historyFixture(b, "ledger", 10, ledgerShape), historyFixture(b, "ledger", 10_000, ledgerShape)
	ctx := context.Background()
	var took [2]time.Duration
	for b.Loop() {
		for i, f := range []*gateHistory{small, large} {
			took[i] += f.runEnd(ctx, b)
		}
	}
	b.ReportMetric(float64(took[0].Microseconds())/float64(b.N), "µs/end-10")
	b.ReportMetric(float64(took[1].Microseconds())/float64(b.N), "µs/end-10000")
	b.ReportMetric(float64(took[1])/float64(took[0]), "ratio")
}

// runEnd opens a store as a new process would, with the run's decision in
// the outbox, and finds the outcomes to record from the gate summary; it
// returns the time that took.
func (f *gateHistory) runEnd(ctx context.Context, b *testing.B) time.Duration {
	state := f.copyState(b)
	defer os.RemoveAll(state)
	e := runner.Event{SpecVersion: "1.0", ID: "pending-" + filepath.Base(state), Source: "urn:nova:bench", Type: runner.EventDecisionMade,
		Time: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), DataContentType: "application/json", RunID: "run-next", ContractID: "c-gate",
		Environment: string(runner.Dev), Data: []byte(`{"decisionId":"dec-next","chosenAction":"proceed"}`)}
	o := outbox{dir: filepath.Join(state, outboxDir), lock: filepath.Join(state, lockName)}
	if err := o.add(chain.Dir("c-gate"), e, nil); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	s, err := Open(ctx, Config{Repo: f.repo, StateDir: state, Keys: f.keys})
	if err != nil {
		b.Fatal(err)
	}
	n, err := runner.RecordDecisionOutcomes(ctx, s, runner.NewEmitter(s, "urn:nova:bench", "run-next", nil), "c-gate")
	took := time.Since(start)
	s.Close()
	if err != nil || n != 0 {
		b.Fatalf("run end on %s: %d outcomes, %v", f.repo, n, err)
	}
	return took
}

// gateHistory is a repo whose one contract has a history of n events.
type gateHistory struct {
	repo, stateBase string
	head            plumbing.Hash
	keys            signing.Keys
}

var (
	gateHistoryMu       sync.Mutex
	gateHistoryFixtures = map[string]*gateHistory{}
)

func gateHistoryFixture(b *testing.B, n int) *gateHistory {
	return historyFixture(b, "gate", n, gateShape)
}

// historyFixture builds, once per test binary, the repo and state dir of
// a contract whose n events are shaped by shape, named name.
func historyFixture(b *testing.B, name string, n int, shape historyShape) *gateHistory {
	return historyFixtureAmong(b, name, n, 0, shape)
}

// historyFixtureAmong is historyFixture in a repo that also holds others
// contracts of one event each.
func historyFixtureAmong(b *testing.B, name string, n, others int, shape historyShape) *gateHistory {
	b.Helper()
	gateHistoryMu.Lock()
	defer gateHistoryMu.Unlock()
	key := fmt.Sprintf("%s-%d-%d", name, n, others)
	if f, ok := gateHistoryFixtures[key]; ok {
		return f
	}
	if fixtureRoot == "" {
		dir, err := os.MkdirTemp("", "nova-evidence-bench-")
		if err != nil {
			b.Fatal(err)
		}
		fixtureRoot = dir
	}
	f := &gateHistory{repo: filepath.Join(fixtureRoot, key+".git"), stateBase: filepath.Join(fixtureRoot, key+"-state"), keys: newKeys(b)}
	var err error
	if f.head, err = buildHistory(f.repo, f.keys, "c-gate", n, others, shape); err != nil {
		b.Fatal(err)
	}
	// The state an earlier run leaves: its witness and what it verified.
	s, err := Open(context.Background(), Config{Repo: f.repo, StateDir: f.stateBase, Keys: f.keys})
	if err != nil {
		b.Fatal(err)
	}
	if err := appendWitness(WitnessFile(f.stateBase), f.head); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Chain(context.Background(), "c-gate"); err != nil {
		b.Fatal(err)
	}
	s.Close()
	gateHistoryFixtures[key] = f
	return f
}

// copyState copies the state dir an earlier run left, for one process
// to start from.
func (f *gateHistory) copyState(b *testing.B) string {
	state, err := os.MkdirTemp(fixtureRoot, "state-")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.CopyFS(state, os.DirFS(f.stateBase)); err != nil {
		b.Fatal(err)
	}
	return state
}

// decide opens a store as a new process would and asks the gate of dev,
// with one event of the run in the outbox when pending is set; it returns
// the time that took.
func (f *gateHistory) decide(ctx context.Context, b *testing.B, pending bool) time.Duration {
	state := f.copyState(b)
	defer os.RemoveAll(state)
	if pending {
		e := runner.Event{SpecVersion: "1.0", ID: "pending-" + filepath.Base(state), Source: "urn:nova:bench", Type: runner.EventApprovalChecked,
			Time: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), DataContentType: "application/json", RunID: "run-next", ContractID: "c-gate",
			Environment: string(runner.Dev), Data: []byte(`{"environment":"dev","imported":0}`)}
		o := outbox{dir: filepath.Join(state, outboxDir), lock: filepath.Join(state, lockName)}
		if err := o.add(chain.Dir("c-gate"), e, nil); err != nil {
			b.Fatal(err)
		}
	}
	st := &runner.State{Contract: &runner.Contract{ID: "c-gate", Environment: runner.Dev}, Plan: &runner.Plan{Digest: "sha256:next"}}
	start := time.Now()
	s, err := Open(ctx, Config{Repo: f.repo, StateDir: state, Keys: f.keys})
	if err != nil {
		b.Fatal(err)
	}
	res, err := runner.Gate{Evidence: s}.Run(ctx, st)
	took := time.Since(start)
	s.Close()
	if err != nil || res.Verdict != runner.Pass {
		b.Fatalf("gate on %s: %v, %v", f.repo, res.Verdict, err)
	}
	return took
}

// historyShape gives the type, run and data of a history's i-th event.
type historyShape func(i int) (typ, run string, data []byte)

// gateShape is runs of three: plan, authorization, completion.
func gateShape(i int) (string, string, []byte) {
	types := []string{runner.EventPlanCreated, runner.EventApplyAuthorized, runner.EventApplyCompleted}
	return types[i%len(types)], fmt.Sprintf("run-%d", i/len(types)), []byte(`{"stage":"bench","verdict":"pass"}`)
}

// ledgerShape is runs of five as Nova writes them in dev: a decision, the
// plan, its authorization and completion, and the decision's outcome.
func ledgerShape(i int) (string, string, []byte) {
	r := i / 5
	run, digest := fmt.Sprintf("run-%d", r), fmt.Sprintf("sha256:%d", r)
	stage := func(name string, result any) []byte {
		raw, _ := json.Marshal(result)
		data, _ := json.Marshal(runner.StageEventData{Stage: name, Verdict: runner.Pass, Result: raw})
		return data
	}
	switch i % 5 {
	case 0:
		return runner.EventDecisionMade, run, []byte(`{"decisionId":"dec-` + run + `","chosenAction":"proceed"}`)
	case 1:
		return runner.EventPlanCreated, run, stage("plan", runner.PlanRecord{Digest: digest})
	case 2:
		return runner.EventApplyAuthorized, run, stage("gate", runner.Authorization{Digest: digest, Environment: runner.Dev})
	case 3:
		return runner.EventApplyCompleted, run, stage("apply", map[string]any{"applied": true})
	}
	data, _ := json.Marshal(runner.OutcomeRecord{Decision: fmt.Sprintf("history-%d", i-4), DecisionID: "dec-" + run, Run: run,
		Outcome: runner.OutcomeApplied, PlanDigest: digest, SettledBy: fmt.Sprintf("history-%d", i-1)})
	return runner.EventDecisionOutcome, run, data
}

// buildHistory writes n signed events of contract, shaped by shape, in one
// signed commit: what the gate reads is the head's tree, however many
// commits made it, and one commit keeps the fixture cheap to build.
func buildHistory(path string, keys signing.Keys, contract string, n, others int, shape historyShape) (plumbing.Hash, error) {
	branch := plumbing.NewBranchReferenceName(chain.DefaultBranch)
	if err := gitrepo.InitBare(path, branch); err != nil {
		return plumbing.ZeroHash, err
	}
	bare, err := gitrepo.OpenBare(path, branch, func(...string) error { return nil }, func(string, ...any) {})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer bare.Close()
	objs := gitrepo.NewObjects()
	buckets := map[string][]gitrepo.Entry{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := ""
	for i := range n {
		typ, run, data := shape(i)
		e := runner.Event{
			SpecVersion: "1.0", ID: fmt.Sprintf("history-%d", i), Source: "urn:nova:bench", Type: typ,
			Time: t0.Add(time.Duration(i) * time.Minute), DataContentType: "application/json", RunID: run,
			ContractID: contract, Environment: string(runner.Dev), Seq: int64(i + 1), PrevEventHash: prev,
			Data: data,
		}
		files, canon, err := sealedFiles(objs, keys, e)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		bucket := chain.BucketName(e.Seq)
		buckets[bucket] = append(buckets[bucket], files...)
		sum := sha256.Sum256(canon)
		prev = hex.EncodeToString(sum[:])
	}
	var dirs []gitrepo.Entry
	for name, files := range buckets {
		slices.SortFunc(files, gitrepo.CompareEntries)
		dirs = append(dirs, gitrepo.Entry{Name: name, Mode: filemode.Dir, Hash: objs.Put(plumbing.TreeObject, gitrepo.EncodeTree(files))})
	}
	slices.SortFunc(dirs, gitrepo.CompareEntries)
	dir := objs.Put(plumbing.TreeObject, gitrepo.EncodeTree(dirs))
	shards := map[string][]gitrepo.Entry{chain.ShardOf(contract): {{Name: chain.Dir(contract), Mode: filemode.Dir, Hash: dir}}}
	for k := range others {
		// Ids shaped as real ones are, a UUID each.
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", k, k)
		typ, run, data := shape(0)
		e := runner.Event{
			SpecVersion: "1.0", ID: "other-" + id, Source: "urn:nova:bench", Type: typ, Time: t0, DataContentType: "application/json",
			RunID: run, ContractID: id, Environment: string(runner.Dev), Seq: 1, Data: data,
		}
		files, _, err := sealedFiles(objs, keys, e)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		slices.SortFunc(files, gitrepo.CompareEntries)
		bucket := objs.Put(plumbing.TreeObject, gitrepo.EncodeTree(files))
		d := objs.Put(plumbing.TreeObject, gitrepo.EncodeTree([]gitrepo.Entry{{Name: chain.BucketName(1), Mode: filemode.Dir, Hash: bucket}}))
		shards[chain.ShardOf(id)] = append(shards[chain.ShardOf(id)], gitrepo.Entry{Name: chain.Dir(id), Mode: filemode.Dir, Hash: d})
	}
	var entries []gitrepo.Entry
	for name, dirs := range shards {
		slices.SortFunc(dirs, gitrepo.CompareEntries)
		entries = append(entries, gitrepo.Entry{Name: name, Mode: filemode.Dir, Hash: objs.Put(plumbing.TreeObject, gitrepo.EncodeTree(dirs))})
	}
	slices.SortFunc(entries, gitrepo.CompareEntries)
	contracts := objs.Put(plumbing.TreeObject, gitrepo.EncodeTree(entries))
	root := objs.Put(plumbing.TreeObject, gitrepo.EncodeTree([]gitrepo.Entry{{Name: chain.ContractsDir, Mode: filemode.Dir, Hash: contracts}}))
	who := keys.Commit.Identity(t0)
	c := &object.Commit{Author: who, Committer: who, Message: "history fixture\n", TreeHash: root}
	if err := keys.Commit.SignCommit(c); err != nil {
		return plumbing.ZeroHash, err
	}
	head, err := objs.PutCommit(c)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return head, bare.Push(context.Background(), plumbing.ZeroHash, head, objs)
}

// sealedFiles signs e and puts its event file and signature into objs,
// returning their entries and the file.
func sealedFiles(objs *gitrepo.Objects, keys signing.Keys, e runner.Event) ([]gitrepo.Entry, []byte, error) {
	canon, err := e.Canonical()
	if err != nil {
		return nil, nil, err
	}
	sig, err := keys.Events.Sign(canon)
	if err != nil {
		return nil, nil, err
	}
	name := chain.EventFileName(e.Seq, e.Type, "json")
	return []gitrepo.Entry{
		{Name: name, Mode: filemode.Regular, Hash: objs.Put(plumbing.BlobObject, canon)},
		{Name: chain.SigPath(name), Mode: filemode.Regular, Hash: objs.Put(plumbing.BlobObject, sig)},
	}, canon, nil
}

// BenchmarkAppendHistory measures what a run's events cost the store of a
// process that has just started, the state dir as an earlier run left
// it: eleven events (a no-change run's) recorded and pushed as one batch,
// on a contract with 10 past events and on one with 10 000: the store's
// cost should not grow with a contract's history. Each of the eleven
// commits writes new trees on its event's path, so what this measures is
// how long those trees are. Every append starts from a copy of the
// fixture repo (not timed), so the history stays the same.
func BenchmarkAppendHistory(b *testing.B) {
	appendRounds(b, gateHistoryFixture(b, 10), gateHistoryFixture(b, 10_000))
}

// appendRounds times a run's append on small and on large, alternating.
func appendRounds(b *testing.B, small, large *gateHistory) {
	ctx := context.Background()
	var took [2]time.Duration
	var added [2]int64
	for b.Loop() {
		for i, f := range []*gateHistory{small, large} {
			d, n := f.appendRun(ctx, b)
			took[i] += d
			added[i] += n
		}
	}
	b.ReportMetric(float64(took[0].Microseconds())/float64(b.N), "µs/append-10")
	b.ReportMetric(float64(took[1].Microseconds())/float64(b.N), "µs/append-10000")
	b.ReportMetric(float64(took[1])/float64(took[0]), "ratio")
	b.ReportMetric(float64(added[0])/float64(b.N), "repo-bytes/append-10")
	b.ReportMetric(float64(added[1])/float64(b.N), "repo-bytes/append-10000")
}

// BenchmarkAppendWide is BenchmarkAppendHistory across a repo instead of
// along a contract: the same eleven events appended to a contract of 10
// past events in a repo holding 10 other contracts and in one holding
// 10 000: every commit writes a new version of the directory that lists
// the contracts.
func BenchmarkAppendWide(b *testing.B) {
	appendRounds(b, historyFixtureAmong(b, "gate", 10, 10, gateShape), historyFixtureAmong(b, "gate", 10, 10_000, gateShape))
}

// appendRun records eleven events of contract c-gate through a fresh store
// on a copy of the fixture repo and pushes them; it returns the time that
// took and how many bytes the repo grew by.
func (f *gateHistory) appendRun(ctx context.Context, b *testing.B) (time.Duration, int64) {
	state := f.copyState(b)
	defer os.RemoveAll(state)
	repo, err := os.MkdirTemp(fixtureRoot, "repo-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(repo)
	if err := os.CopyFS(repo, os.DirFS(f.repo)); err != nil {
		b.Fatal(err)
	}
	before := dirBytes(b, repo)
	start := time.Now()
	s, err := Open(ctx, Config{Repo: repo, StateDir: state, Keys: f.keys})
	if err != nil {
		b.Fatal(err)
	}
	err = recordRun(ctx, s, "run-next")
	took := time.Since(start)
	s.Close()
	if err != nil {
		b.Fatalf("appending to %s: %v", repo, err)
	}
	return took, dirBytes(b, repo) - before
}

// recordRun records a no-change run's eleven events of contract c-gate
// through s and pushes them as one batch.
func recordRun(ctx context.Context, s *Store, run string) error {
	em := runner.NewEmitter(s, "urn:nova:bench", run, nil)
	for i := range 11 {
		if _, err := em.Emit(ctx, "nova.test.step", "c-gate", runner.Dev, map[string]any{"i": i}); err != nil {
			return err
		}
	}
	return em.Flush(ctx, "c-gate")
}

// dirBytes is the size of the files under dir.
func dirBytes(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		n += info.Size()
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkGateAfterOther is BenchmarkGateHistoryPending after another
// machine's run: since this state dir last saw the repo, a process with
// a state dir of its own recorded a no-change run's eleven events for the
// same contract, so the directory's tree is not the one this state dir
// verified. That is the usual case with more than one runner, or with a
// state dir restored from a cache. The guard: the side with 10 000 past
// events within 1.2× of the side with 10.
func BenchmarkGateAfterOther(b *testing.B) {
	gateRounds(b, true, afterOtherFixture(b, 10), afterOtherFixture(b, 10_000))
}

// afterOtherFixture is gateHistoryFixture(n) with eleven more events,
// recorded by a store on a state dir other than the fixture's.
func afterOtherFixture(b *testing.B, n int) *gateHistory {
	b.Helper()
	base := gateHistoryFixture(b, n)
	gateHistoryMu.Lock()
	defer gateHistoryMu.Unlock()
	key := fmt.Sprintf("other-%d", n)
	if f, ok := gateHistoryFixtures[key]; ok {
		return f
	}
	f := &gateHistory{repo: filepath.Join(fixtureRoot, key+".git"), stateBase: base.stateBase, keys: base.keys}
	if err := os.CopyFS(f.repo, os.DirFS(base.repo)); err != nil {
		b.Fatal(err)
	}
	other := filepath.Join(fixtureRoot, key+"-state")
	if err := os.CopyFS(other, os.DirFS(base.stateBase)); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s, err := Open(ctx, Config{Repo: f.repo, StateDir: other, Keys: f.keys})
	if err != nil {
		b.Fatal(err)
	}
	err = recordRun(ctx, s, "run-other")
	s.Close()
	if err != nil {
		b.Fatalf("another machine's run on %s: %v", f.repo, err)
	}
	gateHistoryFixtures[key] = f
	return f
}

// BenchmarkGateFresh is BenchmarkGateHistoryPending on a runner that
// starts with an empty state dir, as a hosted CI job does: the chain is
// read and every event checked, so it grows with the history. It is not
// the guard's measure (the state dir is); it says what a state dir saves.
func BenchmarkGateFresh(b *testing.B) {
	small, large := *gateHistoryFixture(b, 10), *gateHistoryFixture(b, 10_000)
	// The outbox directory only, for the run's pending event.
	empty := filepath.Join(fixtureRoot, "empty-state")
	if err := os.MkdirAll(filepath.Join(empty, outboxDir), 0o700); err != nil {
		b.Fatal(err)
	}
	small.stateBase, large.stateBase = empty, empty
	gateRounds(b, true, &small, &large)
}

// BenchmarkPushWide measures what a run's eleven events send to a remote
// repo over a transport (file://, through git's own receive-pack, told to
// keep what it receives as a pack): the same batch as BenchmarkAppendWide,
// in a repo holding 10 other contracts and in one holding 10 000, whose
// directory of contracts every commit writes a new version of. It reports
// the bytes of the pack each side pushed; the remote's fetch into a new
// clone is not part of it.
func BenchmarkPushWide(b *testing.B) {
	small, large := historyFixtureAmong(b, "gate", 10, 10, gateShape), historyFixtureAmong(b, "gate", 10, 10_000, gateShape)
	var sent [2]int64
	runs := 0
	for b.Loop() {
		for i, f := range []*gateHistory{small, large} {
			sent[i] += f.pushRun(b.Context(), b)
		}
		runs++
	}
	b.ReportMetric(float64(sent[0])/float64(runs), "pushed-bytes-10")
	b.ReportMetric(float64(sent[1])/float64(runs), "pushed-bytes-10000")
}

// pushRun records eleven events of contract c-gate through a store with an
// empty state dir on a copy of the fixture repo reached over file://, and
// returns the size of the pack the push left in the repo.
func (f *gateHistory) pushRun(ctx context.Context, b *testing.B) int64 {
	repo, err := os.MkdirTemp(fixtureRoot, "remote-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(repo)
	if err := os.CopyFS(repo, os.DirFS(f.repo)); err != nil {
		b.Fatal(err)
	}
	for _, kv := range [][2]string{{"receive.unpackLimit", "1"}, {"receive.autogc", "false"}} {
		if out, err := exec.Command("git", "--git-dir", repo, "config", kv[0], kv[1]).CombinedOutput(); err != nil {
			b.Fatalf("git config: %v\n%s", err, out)
		}
	}
	packs := func() map[string]int64 {
		m := map[string]int64{}
		files, _ := filepath.Glob(filepath.Join(repo, "objects", "pack", "*.pack"))
		for _, p := range files {
			info, err := os.Stat(p)
			if err != nil {
				b.Fatal(err)
			}
			m[p] = info.Size()
		}
		return m
	}
	before := packs()
	state, err := os.MkdirTemp(fixtureRoot, "state-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(state)
	s, err := Open(ctx, Config{Repo: "file://" + repo, StateDir: state, Keys: f.keys})
	if err != nil {
		b.Fatal(err)
	}
	err = recordRun(ctx, s, "run-pushed")
	s.Close()
	if err != nil {
		b.Fatalf("pushing to %s: %v", repo, err)
	}
	var sent int64
	for p, n := range packs() {
		if _, old := before[p]; !old {
			sent += n
		}
	}
	if sent == 0 {
		b.Fatal("the push left no pack in the remote repo")
	}
	return sent
}

// BenchmarkFreshClone measures what a runner without a state dir (a
// hosted CI job) spends before its first gate decision when the repo is
// reached over a transport (file://, through git's own upload-pack): the
// fetch of the whole repo into a new clone, the first sync's signature
// checks, and the contract's chain. It grows with the repo, by design
// (docs/evidence.md, "What the store trusts"); the figures say at what
// rate, for a repo of 10 other contracts and one of 10 000.
func BenchmarkFreshClone(b *testing.B) {
	small, large := historyFixtureAmong(b, "gate", 10, 10, gateShape), historyFixtureAmong(b, "gate", 10, 10_000, gateShape)
	var took [2]time.Duration
	runs := 0
	for b.Loop() {
		for i, f := range []*gateHistory{small, large} {
			took[i] += f.freshClone(b.Context(), b)
		}
		runs++
	}
	b.ReportMetric(float64(took[0].Microseconds())/1e3/float64(runs), "ms/open-10")
	b.ReportMetric(float64(took[1].Microseconds())/1e3/float64(runs), "ms/open-10000")
}

// freshClone opens a store with an empty state dir on the fixture repo
// over file:// and reads contract c-gate's chain; it returns the time
// that took.
func (f *gateHistory) freshClone(ctx context.Context, b *testing.B) time.Duration {
	state, err := os.MkdirTemp(fixtureRoot, "state-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(state)
	start := time.Now()
	s, err := Open(ctx, Config{Repo: "file://" + f.repo, StateDir: state, Keys: f.keys})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Chain(ctx, "c-gate"); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
