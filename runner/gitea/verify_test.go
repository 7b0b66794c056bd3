package gitea

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/gitea/giteatest"
)

// TestVerifyCommitOnGitea: on the real server, a commit signed with a key
// its author added to their Gitea account is verified, one signed with a
// key Gitea does not know is signed but unverified, an unsigned one is
// unsigned, and a commit the repository does not have is unknown.
func TestVerifyCommitOnGitea(t *testing.T) {
	f := newForge(t)
	s := f.s
	registered := newPGPKey(t, f.author)
	stranger := newPGPKey(t, f.author)
	var armored bytes.Buffer
	w, err := armor.Encode(&armored, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := registered.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	s.API(t, f.author.Token, http.MethodPost, "/user/gpg_keys", map[string]string{"armored_public_key": armored.String()}, nil)

	dir := t.TempDir()
	auth := &githttp.BasicAuth{Username: f.author.Name, Password: f.author.Token}
	repoURL := s.URL + "/" + org + "/" + repo + ".git"
	r, err := git.PlainClone(dir, false, &git.CloneOptions{URL: repoURL, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	commit := func(name string, key *openpgp.Entity) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
		sig := &object.Signature{Name: f.author.Name, Email: f.author.Email, When: time.Now()}
		h, err := wt.Commit("add "+name, &git.CommitOptions{Author: sig, Committer: sig, SignKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
	verified, unverified, unsigned := commit("a.txt", registered), commit("b.txt", stranger), commit("c.txt", nil)
	if err := r.Push(&git.PushOptions{Auth: auth}); err != nil {
		t.Fatal(err)
	}
	for sha, want := range map[string]runner.CommitSignature{
		verified: runner.CommitVerified, unverified: runner.CommitUnverified, unsigned: runner.CommitUnsigned,
		"0123456789abcdef0123456789abcdef01234567": runner.CommitUnknown,
	} {
		if got, err := f.c.VerifyCommit(t.Context(), "", sha); err != nil || got != want {
			t.Errorf("commit %s: %s, %v; want %s", sha[:12], got, err, want)
		}
	}
}

// newPGPKey is an OpenPGP key for u's login and email.
func newPGPKey(t *testing.T, u giteatest.User) *openpgp.Entity {
	t.Helper()
	e, err := openpgp.NewEntity(u.Name, "", u.Email, &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
