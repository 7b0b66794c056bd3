package evidence

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// tool finds name on PATH. Tests run the real CLIs and never install
// anything: a missing tool fails the test, saying how to get it.
func tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not on PATH: run `make tools` and put its bin dir (~/.cache/nova-tools/bin) on PATH", name)
	}
	return p
}

// TestGitVerifyCommitAcceptsEvidenceCommits runs stock git with a throwaway
// GNUPGHOME holding only the imported public key: what an auditor, GitHub
// or Gitea do once the bot's key is registered.
func TestGitVerifyCommitAcceptsEvidenceCommits(t *testing.T) {
	gitBin, gpg := tool(t, "git"), tool(t, "gpg")
	repo := newBareRepo(t)
	keys := newKeys(t)
	s := openStore(t, repo, keys)
	emitN(t, s, "c-1", 3)

	gnupg, err := os.MkdirTemp("", "gnupg-") // short path: gpg's socket names are length-limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command("gpgconf", "--homedir", gnupg, "--kill", "all").Run()
		os.RemoveAll(gnupg)
	})
	pub, err := keys.Commit.ArmoredPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GNUPGHOME="+gnupg)
	imp := exec.Command(gpg, "--batch", "--import")
	imp.Env, imp.Stdin = env, bytes.NewReader(pub)
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}

	r, _ := git.PlainOpen(repo)
	iter, _ := r.Log(&git.LogOptions{From: headOf(t, repo)})
	n := 0
	_ = iter.ForEach(func(c *object.Commit) error {
		n++
		cmd := exec.Command(gitBin, "--git-dir", repo, "-c", "gpg.program="+gpg, "verify-commit", "-v", c.Hash.String())
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Good signature") {
			t.Errorf("git verify-commit %s: %v\n%s", c.Hash, err, out)
		}
		return nil
	})
	if n != 3 {
		t.Fatalf("checked %d commits, want 3", n)
	}

	// And it refuses a commit the key did not sign.
	f := &tamperFixture{repo: repo, keys: keys, store: s, git: r}
	h := f.rewriteHead(t, func(c *object.Commit) { c.Message = "nova.test.step c-1 dev seq=3 (edited)\n" })
	cmd := exec.Command(gitBin, "--git-dir", repo, "-c", "gpg.program="+gpg, "verify-commit", h.String())
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("git verify-commit accepted an edited commit:\n%s", out)
	}
}

// TestCosignVerifyBlobAcceptsEventSignatures runs the cosign CLI over the
// .json/.sig pairs exactly as they sit in the evidence repo, signed with a
// key from `cosign generate-key-pair` (encrypted, password from env).
func TestCosignVerifyBlobAcceptsEventSignatures(t *testing.T) {
	cosign := tool(t, "cosign")
	dir := t.TempDir()
	// No network: point cosign's TUF client at a closed loopback port and
	// an empty cache, so it proceeds with the key alone.
	env := append(os.Environ(), "COSIGN_PASSWORD=correct horse", "TUF_ROOT="+filepath.Join(dir, "tuf"), "TUF_MIRROR=http://127.0.0.1:1")
	gen := exec.Command(cosign, "generate-key-pair")
	gen.Dir, gen.Env = dir, env
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	signer, err := signing.LoadSignerFile(filepath.Join(dir, "cosign.key"), []byte("correct horse"))
	if err != nil {
		t.Fatalf("loading cosign's key file: %v", err)
	}
	keys := newKeys(t)
	keys.Events = signer
	repo := newBareRepo(t)
	emitN(t, openStore(t, repo, keys), "c-1", 2)

	r, _ := git.PlainOpen(repo)
	c, _ := r.CommitObject(headOf(t, repo))
	tree, _ := c.Tree()
	files := map[string]string{}
	_ = tree.Files().ForEach(func(f *object.File) error {
		content, err := f.Contents()
		files[f.Name] = content
		return err
	})
	verifyBlob := func(name, json, sig string) (string, error) {
		jp, sp := filepath.Join(dir, name+".json"), filepath.Join(dir, name+".sig")
		if err := os.WriteFile(jp, []byte(json), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sp, []byte(sig), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(cosign, "verify-blob", "--key", filepath.Join(dir, "cosign.pub"), "--signature", sp, "--insecure-ignore-tlog=true", jp)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for i := 1; i <= 2; i++ {
		p := chain.EventPath("c-1", int64(i), "nova.test.step")
		out, err := verifyBlob(filepath.Base(p), files[p], files[chain.SigPath(p)])
		if err != nil || !strings.Contains(out, "Verified OK") {
			t.Errorf("cosign verify-blob %s: %v\n%s", p, err, out)
		}
	}
	// A flipped byte must fail.
	p := "contracts/a6/c-1/0xx/1-nova.test.step.json"
	if out, err := verifyBlob("flipped", strings.Replace(files[p], "c-1", "c-2", 1), files[chain.SigPath(p)]); err == nil {
		t.Errorf("cosign verify-blob accepted a modified event:\n%s", out)
	}
}
