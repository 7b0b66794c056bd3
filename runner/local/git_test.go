package local

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
)

func TestCommitVerifier(t *testing.T) {
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	signer := newEntity(t, "signer")
	stranger := newEntity(t, "stranger")
	commit := func(name string, key *openpgp.Entity) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
		h, err := wt.Commit(name, &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}, SignKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
	unsigned := commit("a", nil)
	signed := commit("b", signer)

	tests := []struct {
		name   string
		keys   string
		commit string
		want   runner.CommitSignature
	}{
		{"unsigned", armoredPublic(t, signer), unsigned, runner.CommitUnsigned},
		{"signed, trusted key", armoredPublic(t, signer), signed, runner.CommitVerified},
		{"signed, no keys configured", "", signed, runner.CommitUnverified},
		{"signed by someone else", armoredPublic(t, stranger), signed, runner.CommitInvalid},
		{"not a commit of this repo", "", "0123456789012345678901234567890123456789", runner.CommitUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CommitVerifier{TrustedKeys: tt.keys}.VerifyCommit(t.Context(), dir, tt.commit)
			if err != nil || got != tt.want {
				t.Errorf("VerifyCommit = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
	if got, _ := (CommitVerifier{}).VerifyCommit(t.Context(), t.TempDir(), signed); got != runner.CommitUnknown {
		t.Errorf("outside a repository: %s, want unknown", got)
	}
}

func newEntity(t *testing.T, name string) *openpgp.Entity {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", name+"@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func armoredPublic(t *testing.T, e *openpgp.Entity) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return buf.String()
}

// TestHistoryPrecedes orders commits of a real git history: an ancestor
// precedes, a commit does not precede itself or its ancestors, and in a
// shallow clone a commit cut off from the history is ErrCommitUnknown,
// never "does not precede".
func TestHistoryPrecedes(t *testing.T) {
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	var m []string
	for _, name := range []string{"m1", "m2", "m3"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
		h, err := wt.Commit(name, &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		m = append(m, h.String())
	}
	h := History{Dir: dir}
	for _, tt := range []struct {
		a, b string
		want bool
	}{{m[0], m[2], true}, {m[1], m[2], true}, {m[2], m[2], false}, {m[2], m[0], false}} {
		if got, err := h.Precedes(tt.a, tt.b); err != nil || got != tt.want {
			t.Errorf("Precedes(%.7s, %.7s) = %v, %v; want %v", tt.a, tt.b, got, err, tt.want)
		}
	}
	if _, err := h.Precedes("0123456789012345678901234567890123456789", m[2]); !errors.Is(err, runner.ErrCommitUnknown) {
		t.Errorf("a commit the repository does not hold: %v, want %v", err, runner.ErrCommitUnknown)
	}

	shallow := filepath.Join(t.TempDir(), "shallow")
	if out, err := exec.Command("git", "clone", "-q", "--depth", "2", "file://"+dir, shallow).CombinedOutput(); err != nil {
		t.Fatalf("git clone --depth 2: %v\n%s", err, out)
	}
	sh := History{Dir: shallow}
	if got, err := sh.Precedes(m[1], m[2]); err != nil || !got {
		t.Errorf("in the shallow clone, Precedes(m2, m3) = %v, %v; want true", got, err)
	}
	if _, err := sh.Precedes(m[0], m[2]); !errors.Is(err, runner.ErrCommitUnknown) {
		t.Errorf("in the shallow clone, m1 is cut off: %v, want %v", err, runner.ErrCommitUnknown)
	}
}
