package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

func TestStoreWritesSignedChainedCommits(t *testing.T) {
	repo := newBareRepo(t)
	keys := newKeys(t)
	s := openStore(t, repo, keys)
	a := emitN(t, s, "c-a", 3)
	b := emitN(t, s, "c-b", 2)
	a = append(a, emitN(t, s, "c-a", 1)...) // a second run continues the chain

	if rep := verifyRepo(t, repo, verifyOptions(t, keys)); !rep.OK() || rep.Events != 6 || rep.Commits != 6 || rep.Contracts != 2 {
		t.Fatalf("verify: %+v%s", rep, dumpFindings(rep))
	}
	pending, err := s.Pending()
	if err != nil || len(pending) != 0 {
		t.Fatalf("outbox after push: %d events, %v", len(pending), err)
	}

	r, err := git.PlainOpen(repo)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := keys.Commit.ArmoredPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	iter, err := r.Log(&git.LogOptions{From: headOf(t, repo)})
	if err != nil {
		t.Fatal(err)
	}
	var messages []string
	err = iter.ForEach(func(c *object.Commit) error {
		// go-git's own verification, as the design names it.
		if _, err := c.Verify(string(pub)); err != nil {
			t.Errorf("commit %s: go-git Verify: %v", c.Hash, err)
		}
		if c.Committer.Email != "nova-test@example.com" {
			t.Errorf("committer %q", c.Committer.Email)
		}
		messages = append([]string{strings.TrimSpace(c.Message)}, messages...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"nova.test.step c-a dev seq=1", "nova.test.step c-a dev seq=2", "nova.test.step c-a dev seq=3",
		"nova.test.step c-b dev seq=1", "nova.test.step c-b dev seq=2", "nova.test.step c-a dev seq=4",
	}
	if diff := cmp.Diff(want, messages); diff != "" {
		t.Errorf("commit messages (-want +got):\n%s", diff)
	}

	events, err := s.Chain(context.Background(), "c-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 {
		t.Fatalf("c-a has %d events, want 4", len(events))
	}
	prev := ""
	for i, e := range events {
		if e.ID != a[i].ID || e.Seq != int64(i+1) || e.PrevEventHash != prev {
			t.Errorf("event %d: id %s seq %d prev %q; want id %s seq %d prev %q", i, e.ID, e.Seq, e.PrevEventHash, a[i].ID, i+1, prev)
		}
		canon, _ := e.Canonical()
		sum := sha256.Sum256(canon)
		prev = hex.EncodeToString(sum[:])
	}
	if cb, err := s.Chain(context.Background(), "c-b"); err != nil || len(cb) != 2 || cb[1].ID != b[1].ID {
		t.Errorf("Chain(c-b) = %d events, %v; want 2 ending in %s", len(cb), err, b[1].ID)
	}
	if none, err := s.Chain(context.Background(), "c-none"); err != nil || len(none) != 0 {
		t.Errorf("Chain of an unknown contract = %d events, %v", len(none), err)
	}
}

func TestEventsWithoutContractGoUnderNone(t *testing.T) {
	repo := newBareRepo(t)
	keys := newKeys(t)
	s := openStore(t, repo, keys)
	emitN(t, s, "", 2)
	rep := verifyRepo(t, repo, verifyOptions(t, keys))
	if !rep.OK() || rep.Events != 2 {
		t.Fatalf("verify: %+v%s", rep, dumpFindings(rep))
	}
	r, _ := git.PlainOpen(repo)
	c, _ := r.CommitObject(headOf(t, repo))
	if _, err := c.File("contracts/a6/_none/0xx/2-nova.test.step.json"); err != nil {
		t.Errorf("event without contract: %v", err)
	}
}

func TestRecordRefusesNamesOutsideTheLayout(t *testing.T) {
	s := openStore(t, newBareRepo(t), newKeys(t))
	for _, e := range []runner.Event{
		{ID: "1", Type: "nova.test.step", ContractID: "../escape"},
		{ID: "2", Type: "Nova Step", ContractID: "c"},
		{ID: "", Type: "nova.test.step", ContractID: "c"},
	} {
		if err := s.Record(context.Background(), e); runner.ReasonOf(err) != runner.EventWriteFailed {
			t.Errorf("Record(%+v) = %v, want EVENT_WRITE_FAILED", e, err)
		}
	}
}
