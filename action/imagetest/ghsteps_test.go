package imagetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GitHub's own actions in the emulation, by what they do with the
// workspace and the run: actions/checkout, actions/upload-artifact and
// actions/download-artifact, github/codeql-action/upload-sarif; and the
// hashFiles() they are often guarded by.

// checkout does what actions/checkout does with persist-credentials
// false: a repository in the workspace at ref (default: the event's
// sha), fetched at depth 1, origin the repository's URL.
func (run *ghRun) checkout(r *githubRunner, with map[string]string) stepResult {
	t := run.a.t
	if with["persist-credentials"] != "false" {
		t.Errorf("actions/checkout keeps the job's token in the workspace's git config (persist-credentials %q)", with["persist-credentials"])
	}
	ref := firstNonEmptyString(with["ref"], run.sha)
	for _, args := range [][]string{
		{"init", "-q", r.workspace},
		{"-C", r.workspace, "fetch", "-q", "--no-tags", "--depth", "1", "file://" + run.a.git, ref},
		{"-C", r.workspace, "checkout", "-q", "--detach", "FETCH_HEAD"},
		{"-C", r.workspace, "remote", "add", "origin", run.a.gh.serverURL() + "/" + run.a.gh.owner + "/" + run.a.gh.repo},
	} {
		if out, err := exec.CommandContext(t.Context(), "git", args...).CombinedOutput(); err != nil {
			return stepResult{exitCode: 1, stderr: fmt.Sprintf("git %v: %v\n%s", args, err, out)}
		}
	}
	head, err := exec.CommandContext(t.Context(), "git", "-C", r.workspace, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	r.sha = strings.TrimSpace(string(head))
	return stepResult{outputs: map[string]string{"ref": ref, "commit": r.sha}}
}

// uploadArtifact keeps path (relative to the workspace) as the run's
// artifact name, hidden files included when asked.
func (run *ghRun) uploadArtifact(r *githubRunner, with map[string]string) stepResult {
	t := run.a.t
	src := filepath.Join(r.workspace, with["path"])
	dst := filepath.Join(t.TempDir(), "artifact")
	n, err := copyTree(src, dst, with["include-hidden-files"] == "true")
	if err != nil || (n == 0 && with["if-no-files-found"] == "error") {
		return stepResult{exitCode: 1, stderr: fmt.Sprintf("No files were found with the provided path: %s (%v)", with["path"], err)}
	}
	if _, ok := run.artifacts[with["name"]]; ok {
		return stepResult{exitCode: 1, stderr: "an artifact with this name already exists on the workflow run"}
	}
	run.artifacts[with["name"]] = dst
	return stepResult{}
}

// downloadArtifact copies the run's artifact name to path.
func (run *ghRun) downloadArtifact(r *githubRunner, with map[string]string) stepResult {
	src, ok := run.artifacts[with["name"]]
	if !ok {
		return stepResult{exitCode: 1, stderr: "Artifact not found for name: " + with["name"]}
	}
	if _, err := copyTree(src, filepath.Join(r.workspace, with["path"]), true); err != nil {
		return stepResult{exitCode: 1, stderr: err.Error()}
	}
	return stepResult{}
}

// uploadSARIF checks what code scanning takes: a SARIF file, and the ref
// and commit of the pull request it is about, given together.
func (run *ghRun) uploadSARIF(r *githubRunner, with map[string]string) stepResult {
	data, err := os.ReadFile(filepath.Join(r.workspace, with["sarif_file"]))
	var sarif struct {
		Version string `json:"version"`
	}
	if err == nil {
		err = json.Unmarshal(data, &sarif)
	}
	switch {
	case err != nil || sarif.Version != "2.1.0":
		return stepResult{exitCode: 1, stderr: fmt.Sprintf("not a SARIF 2.1.0 file: %v", err)}
	case (with["ref"] == "") != (with["sha"] == ""), with["ref"] != "" && !strings.HasPrefix(with["ref"], "refs/"):
		return stepResult{exitCode: 1, stderr: "ref and sha must be given together, ref as refs/…"}
	}
	return stepResult{}
}

// copyTree copies the files under src to dst and counts them.
func copyTree(src, dst string, hidden bool) (int, error) {
	n := 0
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if !hidden && rel != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	return n, err
}

// hashFiles is hashFiles() of the workspace: the sha256 of the sha256s of
// the files the patterns match, empty when none does.
func hashFiles(workspace string, patterns []string) (string, error) {
	outer := sha256.New()
	n := 0
	for _, p := range patterns {
		matches, err := filepath.Glob(filepath.Join(workspace, p))
		if err != nil {
			return "", err
		}
		for _, m := range matches {
			if fi, err := os.Stat(m); err != nil || fi.IsDir() {
				continue
			}
			data, err := os.ReadFile(m)
			if err != nil {
				return "", err
			}
			sum := sha256.Sum256(data)
			outer.Write(sum[:])
			n++
		}
	}
	if n == 0 {
		return "", nil
	}
	return hex.EncodeToString(outer.Sum(nil)), nil
}
