package evidence

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/evidencetest"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// TestFixtureV1Verifies reads the fixture evidence repo, written once by
// an earlier Nova (evidencetest.FixtureV1), with today's code: Verify
// accepts it, and the store reads every contract's chain from it.
func TestFixtureV1Verifies(t *testing.T) {
	ctx := t.Context()
	fix := evidencetest.OpenFixtureV1(t)
	eventKeys, commitKeys := fixtureV1Keys(t, fix)
	witness, err := ReadWitness(fix.Witness)
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Events, Commits, Contracts int
		Head                       string
	}
	b, err := os.ReadFile(filepath.Join(fix.Dir, "want.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{fix.Repo, "file://" + fix.Repo} {
		repo, err := chain.OpenRepo(ctx, target, "", chain.Credentials{})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := chain.Verify(ctx, repo, chain.VerifyOptions{EventKeys: eventKeys, CommitKeys: commitKeys, Witness: witness})
		repo.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || rep.Events != want.Events || rep.Commits != want.Commits || rep.Contracts != want.Contracts || rep.Head != want.Head || rep.Witnessed != len(witness) {
			t.Errorf("%s: verify reports %+v, want %+v and %d witnessed heads", target, rep, want, len(witness))
		}
	}

	// The writer's own keys are new: the fixture's are only trusted, as
	// after a key rotation.
	keys := newKeys(t)
	trusted, err := signing.LoadPublicKeys(readFile(t, fix.EventKey))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Config{Repo: fix.Repo, StateDir: t.TempDir(), Keys: keys, TrustedEventKeys: trusted, AllowedCommitKeys: commitKeys})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	total := 0
	for _, id := range fixtureContracts(t, fix.Repo) {
		events, err := s.Chain(ctx, id)
		if err != nil {
			t.Fatalf("chain of %s: %v", id, err)
		}
		total += len(events)
	}
	if total != want.Events {
		t.Errorf("the store read %d events, want %d", total, want.Events)
	}
}

// TestFixtureV1Canonical re-derives, without the evidence package, every
// byte the fixture's signatures and hashes were made over: each event file
// is runner.Canonical of the event it decodes to, each event signature
// verifies over its sha256, each preveventhash is the sha256 of the file
// before it, each approval's signed claim and each attestation's statement
// is runner.Canonical of what it decodes to and its signature verifies, and
// each commit signature verifies with go-crypto over the commit as go-git
// encodes it without the signature.
func TestFixtureV1Canonical(t *testing.T) {
	fix := evidencetest.OpenFixtureV1(t)
	eventKey := ecdsaKey(t, readFile(t, fix.EventKey))
	commitRing, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(readFile(t, fix.CommitKey)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := git.PlainOpen(fix.Repo)
	if err != nil {
		t.Fatal(err)
	}
	head, err := r.Reference(plumbing.NewBranchReferenceName(chain.DefaultBranch), true)
	if err != nil {
		t.Fatal(err)
	}
	commits, files := 0, map[string][]byte{}
	for h := head.Hash(); !h.IsZero(); {
		c, err := r.CommitObject(h)
		if err != nil {
			t.Fatal(err)
		}
		checkCommitSignature(t, c, commitRing)
		commits++
		tree, err := c.Tree()
		if err != nil {
			t.Fatal(err)
		}
		if commits == 1 {
			err = tree.Files().ForEach(func(f *object.File) error {
				s, err := f.Contents()
				files[f.Name] = []byte(s)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		h = plumbing.ZeroHash
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		}
	}
	events, embedded := 0, map[string]int{}
	for name, file := range files {
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		events++
		var e runner.Event
		if err := json.Unmarshal(file, &e); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		canon, err := e.Canonical()
		if err != nil || !bytes.Equal(canon, file) {
			t.Errorf("%s: canonical form differs from the file (%v)\n got  %q\n file %q", name, err, canon, file)
		}
		sum := sha256.Sum256(file)
		if !verifyBase64(eventKey, sum[:], files[strings.TrimSuffix(name, ".json")+".sig"]) {
			t.Errorf("%s: its signature does not verify over the file's sha256", name)
		}
		if e.Seq > 1 {
			prev := prevFile(t, files, name, e.Seq-1)
			if ps := sha256.Sum256(prev); hex.EncodeToString(ps[:]) != e.PrevEventHash {
				t.Errorf("%s: preveventhash %s is not the sha256 of seq %d", name, e.PrevEventHash, e.Seq-1)
			}
		}
		embedded[checkEmbeddedSignatures(t, fix, eventKey, name, e)]++
	}
	if commits != events || events == 0 {
		t.Errorf("%d commits, %d events: one commit per event expected", commits, events)
	}
	if embedded["claim"] < 2 || embedded["attestation"] == 0 {
		t.Errorf("checked %d claims and %d attestations; the fixture holds an approval, a rejection and attestations", embedded["claim"], embedded["attestation"])
	}
}

func checkCommitSignature(t *testing.T, c *object.Commit, ring openpgp.EntityList) {
	t.Helper()
	unsigned := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(unsigned); err != nil {
		t.Fatal(err)
	}
	rd, err := unsigned.Reader()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openpgp.CheckArmoredDetachedSignature(ring, rd, strings.NewReader(c.PGPSignature), nil); err != nil {
		t.Errorf("commit %s: %v", c.Hash, err)
	}
	whole := &plumbing.MemoryObject{}
	if err := c.Encode(whole); err != nil {
		t.Fatal(err)
	}
	if whole.Hash() != c.Hash {
		t.Errorf("commit %s re-encodes to %s", c.Hash, whole.Hash())
	}
}

// checkEmbeddedSignatures checks what an event carries signed in its data:
// an approval's or rejection's claim (by its approver's key) and an
// attestation's DSSE envelope (by the event key). It returns which it
// checked: "claim", "attestation" or "".
func checkEmbeddedSignatures(t *testing.T, fix evidencetest.FixtureV1, eventKey *ecdsa.PublicKey, name string, e runner.Event) string {
	t.Helper()
	switch e.Type {
	case runner.EventApprovalRecorded, runner.EventApprovalRejected:
		var data struct {
			Claim *runner.SignedClaim `json:"claim"`
		}
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if data.Claim == nil {
			return ""
		}
		msg, err := runner.Canonical(data.Claim.Claim)
		if err != nil {
			t.Fatal(err)
		}
		key := ecdsaKey(t, readFile(t, filepath.Join(fix.Dir, "approvers", data.Claim.Claim.Approver+".pub")))
		sum := sha256.Sum256(msg)
		if !verifyBase64(key, sum[:], []byte(data.Claim.Signature)) {
			t.Errorf("%s: the claim's signature does not verify over its canonical form", name)
		}
		return "claim"
	case runner.EventAttestation:
		var att runner.AttestationRecord
		if err := runner.DecodeEventData(e, &att); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		payload, err := base64.StdEncoding.DecodeString(att.Envelope.Payload)
		if err != nil {
			t.Fatal(err)
		}
		stmt, err := att.Envelope.DecodeStatement()
		if err != nil {
			t.Fatal(err)
		}
		if canon, err := runner.Canonical(stmt); err != nil || !bytes.Equal(canon, payload) {
			t.Errorf("%s: the statement's canonical form differs from the payload (%v)", name, err)
		}
		sum := sha256.Sum256(runner.PAE(att.Envelope.PayloadType, payload))
		if len(att.Envelope.Signatures) != 1 || !verifyBase64(eventKey, sum[:], []byte(att.Envelope.Signatures[0].Sig)) {
			t.Errorf("%s: the envelope's signature does not verify", name)
		}
		return "attestation"
	}
	return ""
}

// prevFile is the event file of seq in name's contract directory.
func prevFile(t *testing.T, files map[string][]byte, name string, seq int64) []byte {
	t.Helper()
	contractDir := path.Dir(path.Dir(name))
	for n, b := range files {
		if path.Dir(path.Dir(n)) == contractDir && strings.HasSuffix(n, ".json") && strings.HasPrefix(path.Base(n), jsonSeq(seq)) {
			return b
		}
	}
	t.Fatalf("%s: no event %d before it", name, seq)
	return nil
}

func jsonSeq(seq int64) string {
	b, _ := json.Marshal(seq)
	return string(b) + "-"
}

func verifyBase64(key *ecdsa.PublicKey, digest, sig []byte) bool {
	der, err := base64.StdEncoding.DecodeString(string(sig))
	return err == nil && ecdsa.VerifyASN1(key, digest, der)
}

func ecdsaKey(t *testing.T, pemBytes []byte) *ecdsa.PublicKey {
	t.Helper()
	keys, err := signing.LoadPublicKeys(pemBytes)
	if err != nil || len(keys) != 1 {
		t.Fatalf("%d keys: %v", len(keys), err)
	}
	k, ok := keys[0].(*ecdsa.PublicKey)
	if !ok {
		t.Fatalf("a %T, not an ECDSA key", keys[0])
	}
	return k
}

func fixtureV1Keys(t *testing.T, fix evidencetest.FixtureV1) (*signing.KeySet, *signing.CommitKeyRing) {
	t.Helper()
	pub, err := signing.LoadPublicKeys(readFile(t, fix.EventKey))
	if err != nil {
		t.Fatal(err)
	}
	events, err := signing.NewKeySet(pub...)
	if err != nil {
		t.Fatal(err)
	}
	commits, err := signing.LoadCommitKeyRing(readFile(t, fix.CommitKey))
	if err != nil {
		t.Fatal(err)
	}
	return events, commits
}

// fixtureContracts lists the contract ids in the fixture's head tree.
func fixtureContracts(t *testing.T, repo string) []string {
	t.Helper()
	r, err := git.PlainOpen(repo)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.CommitObject(headOf(t, repo))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	err = tree.Files().ForEach(func(f *object.File) error {
		// contracts/<shard>/<id>/<bucket>/<file>
		if parts := strings.Split(f.Name, "/"); len(parts) == 5 && !seen[parts[2]] {
			seen[parts[2]] = true
			out = append(out, parts[2])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
