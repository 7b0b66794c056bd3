package local

import (
	"bytes"
	"os"
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
