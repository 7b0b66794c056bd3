package evidence

import (
	"bytes"
	"testing"

	"github.com/go-git/go-git/v5/storage/memory"
)

// TestExpectParentDerivesTheParentsTrees: for every commit of a healthy
// repo (a contract's first event, later ones whose files end their
// bucket, 2-… to 9-…, and ones whose files sort inside it, 10-… and 11-…
// before 2-…), the trees expectParent keeps are byte for byte the
// parent's as stored, readable with the repo gone, and it reports the
// commit as adding only its event; for a commit whose message names
// another event it keeps nothing and says so.
func TestExpectParentDerivesTheParentsTrees(t *testing.T) {
	repo := newBareRepo(t)
	s := openStore(t, repo, newKeys(t))
	emitN(t, s, "c-a", 11)
	emitN(t, s, "c-b", 1)
	emitN(t, s, "c-a", 1)
	r, err := OpenRepo(t.Context(), repo, "", Credentials{})
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
