package evidence

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
)

// firstParentLog is the messages of the branch's first-parent history,
// newest first, as git reads them.
func firstParentLog(t *testing.T, repo string) []string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", repo, "log", "--first-parent", "--format=%s", "refs/heads/"+chain.DefaultBranch).CombinedOutput()
	if err != nil {
		t.Fatalf("git log: %v\n%s", err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func witnessed(t *testing.T, s *Store) []string {
	t.Helper()
	heads, err := ReadWitness(s.WitnessPath())
	if err != nil {
		t.Fatal(err)
	}
	return heads
}

// TestARunsEventsArePushedInOneBatch: events wait in the outbox, durable,
// until something needs them in the repo; then they go as one chain of
// signed commits, one per event, with one ref update and one witnessed
// head. The authorization is such a point: it is in the repo, with every
// event before it, when Record returns.
func TestARunsEventsArePushedInOneBatch(t *testing.T) {
	ctx := t.Context()
	for _, tr := range []struct {
		name string
		url  func(repo string) string
	}{
		{"in place", func(repo string) string { return repo }},
		{"file transport", func(repo string) string { return "file://" + repo }},
	} {
		t.Run(tr.name, func(t *testing.T) {
			repo := newBareRepo(t)
			keys := newKeys(t)
			s := openStore(t, tr.url(repo), keys)
			em := runner.NewEmitter(s, "urn:nova:test", "run-1", testClock())
			emit := func(typ string) {
				t.Helper()
				if _, err := em.Emit(ctx, typ, "c-1", "dev", map[string]string{"stage": typ}); err != nil {
					t.Fatal(err)
				}
			}
			for _, typ := range []string{"nova.schema.completed", runner.EventPlanCreated, "nova.policy.completed"} {
				emit(typ)
			}
			if out, err := exec.Command("git", "--git-dir", repo, "rev-parse", "--verify", "-q", "refs/heads/"+chain.DefaultBranch).Output(); err == nil {
				t.Fatalf("ordinary events were pushed one by one (head %s)", out)
			}
			if p, err := s.Pending(); err != nil || len(p) != 3 {
				t.Fatalf("outbox holds %d events (%v), want 3", len(p), err)
			}

			emit(runner.EventApplyAuthorized)
			log := firstParentLog(t, repo)
			if len(log) != 4 || !strings.HasPrefix(log[0], runner.EventApplyAuthorized+" ") {
				t.Fatalf("after the authorization the branch holds %q; want it on top of the 3 events before it", log)
			}
			if w := witnessed(t, s); len(w) != 1 || w[0] != headOf(t, repo).String() {
				t.Fatalf("witness %v after one batch, want its head once", w)
			}

			emit(runner.EventApplyCompleted)
			emit(runner.EventAttestation)
			if err := s.Drain(ctx); err != nil {
				t.Fatal(err)
			}
			if w := witnessed(t, s); len(w) != 2 {
				t.Fatalf("witness %v after two batches, want two heads", w)
			}
			rep := verifyRepo(t, repo, verifyOptions(t, keys))
			if !rep.OK() || rep.Events != 6 || rep.Commits != 6 {
				t.Fatalf("%d events in %d commits, want 6 in 6; findings:%s", rep.Events, rep.Commits, dumpFindings(rep))
			}
			if p, _ := s.Pending(); len(p) != 0 {
				t.Fatalf("%d events left in the outbox", len(p))
			}
		})
	}
}

// TestEventsLeftInTheOutboxReachTheNextRun: a run that dies between
// recording its events and pushing them (SIGKILL: no Drain, no Close)
// leaves them in the outbox, and the next run on the state dir delivers
// them exactly once, in order.
func TestEventsLeftInTheOutboxReachTheNextRun(t *testing.T) {
	ctx := t.Context()
	repo := newBareRepo(t)
	keys := newKeys(t)
	stateDir := t.TempDir()
	killed := openStoreIn(t, repo, stateDir, keys)
	em := runner.NewEmitter(killed, "urn:nova:test", "run-1", testClock())
	var ids []string
	for i := range 5 {
		e, err := em.Emit(ctx, "nova.test.step", "c-1", "dev", map[string]int{"i": i})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	// killed is abandoned here, as a killed process would leave it.

	next := openStoreIn(t, repo, stateDir, keys)
	if err := next.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range chainOf(t, repo, keys, "c-1") {
		got = append(got, e.ID)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("chain after the next run's drain = %v, want %v", got, ids)
	}
	if w := witnessed(t, next); len(w) != 1 {
		t.Errorf("witness %v, want the one batch's head", w)
	}
	if p, _ := next.Pending(); len(p) != 0 {
		t.Errorf("%d events left in the outbox", len(p))
	}
}

// TestChainIncludesPendingEvents: the gate reads the chain before the run
// has pushed anything; what the run recorded (the approvals it imported)
// must count, numbered as it will be written.
func TestChainIncludesPendingEvents(t *testing.T) {
	ctx := t.Context()
	repo := newBareRepo(t)
	keys := newKeys(t)
	emitN(t, openStore(t, repo, keys), "c-1", 2) // earlier runs, pushed

	s := openStore(t, repo, keys)
	em := runner.NewEmitter(s, "urn:nova:test", "run-2", testClock())
	approval, err := em.Emit(ctx, runner.EventApprovalRecorded, "c-1", "prod", runner.ApprovalRecord{Environment: "prod", Approver: "alice", PlanDigest: "d"})
	if err != nil {
		t.Fatal(err)
	}
	events, err := s.Chain(ctx, "c-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 3 || events[2].ID != approval.ID || events[2].Seq != 3 {
		t.Fatalf("Chain = %d events (last %+v), want the 2 pushed and the pending approval as seq 3", len(events), events[len(events)-1])
	}
	if prev, _ := events[1].Hash(); events[2].PrevEventHash != prev {
		t.Errorf("pending event links to %q, want %q", events[2].PrevEventHash, prev)
	}
	if err := s.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	pushed, err := s.Chain(ctx, "c-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(pushed) != 3 || pushed[2].ID != approval.ID {
		t.Fatalf("after the push Chain = %d events", len(pushed))
	}
}
