package chain

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/nova-platform/nova/runner"
)

// gitEvidenceRepo commits, with git itself, one event file and its
// signature per commit in the layout and with the message Nova writes
// (contents and signatures are placeholders: the trees are what is
// tested), and returns the repo.
func gitEvidenceRepo(t *testing.T, events []runner.Event) string {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("init", "-q", "-b", DefaultBranch)
	for _, e := range events {
		p := filepath.Join(dir, EventPath(e.ContractID, e.Seq, e.Type))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{p, SigPath(p)} {
			if err := os.WriteFile(f, []byte(fmt.Sprintf("%s %d", e.ContractID, e.Seq)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		git("add", ".")
		git("commit", "-q", "-m", CommitMessage(e))
	}
	return dir
}

// TestExpectParentDerivesTheParentsTrees: for every commit of a healthy
// repo (a contract's first event, later ones whose files end their
// bucket, 2-… to 9-…, and ones whose files sort inside it, 10-… and 11-…
// before 2-…), the trees expectParent keeps are byte for byte the
// parent's as stored, readable with the repo gone, and it reports the
// commit as adding only its event; for a commit whose message names
// another event it keeps nothing and says so.
func TestExpectParentDerivesTheParentsTrees(t *testing.T) {
	var events []runner.Event
	seq := map[string]int64{}
	for _, run := range []struct {
		contract string
		n        int
	}{{"c-a", 11}, {"c-b", 1}, {"c-a", 1}} {
		for range run.n {
			seq[run.contract]++
			events = append(events, runner.Event{Type: "nova.test.step", ContractID: run.contract, Environment: "dev", Seq: seq[run.contract]})
		}
	}
	r, err := OpenRepo(t.Context(), gitEvidenceRepo(t, events), "", Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	read := r.NewReader()
	checked := 0
	for h := r.head; ; {
		c, err := read.Commit(h)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		parent, err := read.Commit(c.ParentHashes[0])
		if err != nil {
			t.Fatal(err)
		}
		subj, ok := parseCommitMessage(c.Message)
		if !ok {
			t.Fatalf("commit %s: message %q", c.Hash, c.Message)
		}
		want, err := read.RawTree(parent.TreeHash)
		if err != nil {
			t.Fatal(err)
		}

		derive := r.NewReader()
		if !expectParent(derive, c.TreeHash, parent.TreeHash, subj) {
			t.Errorf("commit %s (%s): not reported as adding only its event", short(c.Hash), c.Message)
		}
		derive.Use(memory.NewStorage()) // nothing more can be read
		if got, err := derive.RawTree(parent.TreeHash); err != nil || !bytes.Equal(got, want) {
			t.Errorf("commit %s (%s): parent's root not derived (%v)", short(c.Hash), c.Message, err)
		}

		wrong := subj
		wrong.Seq++
		derive = r.NewReader()
		if expectParent(derive, c.TreeHash, parent.TreeHash, wrong) {
			t.Errorf("commit %s: reported as adding only an event its message does not name", short(c.Hash))
		}
		derive.Use(memory.NewStorage())
		if _, err := derive.RawTree(parent.TreeHash); err == nil {
			t.Errorf("commit %s: derived its parent from a message naming another event", short(c.Hash))
		}
		checked++
		h = parent.Hash
	}
	if checked != 12 {
		t.Errorf("checked %d commits, want 12", checked)
	}
}
