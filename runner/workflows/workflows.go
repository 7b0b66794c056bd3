// Package workflows reads a consumer's GitHub and Gitea workflow files for
// how they use Nova: which jobs reach prod or dr, and whether those run the
// action (or the reusable workflow) by a tag, which can be moved to other
// code, or by a commit, which cannot. `nova pin` rewrites the tags to
// commits; `nova validate` warns about the ones left.
package workflows

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
	"go.yaml.in/yaml/v3"

	"github.com/nova-platform/nova/runner"
)

// Dirs are where the forges look for workflows, relative to the
// repository root.
var Dirs = []string{".github/workflows", ".gitea/workflows"}

// maxWorkflowBytes bounds a workflow file read.
const maxWorkflowBytes = 1 << 20

// Use is one reference to Nova in a workflow: a step's or a job's `uses:`.
type Use struct {
	// File is relative to the repository root; Line is 1-based.
	File string
	Line int
	Job  string
	// Target is what is used (owner/name, or owner/name/path of the
	// reusable workflow) and Ref what follows the @.
	Target, Ref string
	// ProdBound is true when the job deploys to prod or dr.
	ProdBound bool
}

// Pinned reports whether the reference names a full commit.
func (u Use) Pinned() bool { return commitRef().MatchString(u.Ref) }

var commitRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}$`) })

// Scan finds every use of repo (owner/name) in the workflows under root.
func Scan(root, repo string) ([]Use, error) {
	var uses []Use
	err := eachWorkflow(root, func(rel, _ string, data []byte) error {
		found, err := scanFile(rel, data, repo)
		uses = append(uses, found...)
		return err
	})
	return uses, err
}

// eachWorkflow calls fn with every workflow file under root: its path
// from root, the forge's directory it is in, and its bytes.
func eachWorkflow(root string, fn func(rel, dir string, data []byte) error) error {
	for _, dir := range Dirs {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return runner.Errorf(runner.ConfigInvalid, "reading %s: %w", dir, err)
		}
		for _, e := range entries {
			ext := filepath.Ext(e.Name())
			if e.IsDir() || (ext != ".yml" && ext != ".yaml") {
				continue
			}
			rel := filepath.ToSlash(filepath.Join(dir, e.Name()))
			data, err := readWorkflow(filepath.Join(root, rel))
			if err != nil {
				return err
			}
			if err := fn(rel, dir, data); err != nil {
				return err
			}
		}
	}
	return nil
}

func readWorkflow(path string) ([]byte, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, runner.Errorf(runner.ConfigInvalid, "reading %s: %w", path, err)
	}
	if !info.Mode().IsRegular() || info.Size() > maxWorkflowBytes {
		return nil, runner.Errorf(runner.ConfigInvalid, "%s is not a regular file of at most %d bytes", path, maxWorkflowBytes)
	}
	return os.ReadFile(path)
}

// scanFile finds the uses of repo in one workflow.
func scanFile(file string, data []byte, repo string) ([]Use, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, runner.Errorf(runner.ConfigInvalid, "%s: %w", file, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	jobs := value(doc.Content[0], "jobs")
	if jobs == nil || jobs.Kind != yaml.MappingNode {
		return nil, nil
	}
	var uses []Use
	for i := 0; i+1 < len(jobs.Content); i += 2 {
		name, job := jobs.Content[i].Value, jobs.Content[i+1]
		prod := prodBound(job)
		add := func(n *yaml.Node) {
			if n == nil || n.Kind != yaml.ScalarNode {
				return
			}
			target, ref, ok := strings.Cut(n.Value, "@")
			if !ok || (target != repo && !strings.HasPrefix(target, repo+"/")) {
				return
			}
			uses = append(uses, Use{File: file, Line: n.Line, Job: name, Target: target, Ref: ref, ProdBound: prod})
		}
		add(value(job, "uses"))
		if steps := value(job, "steps"); steps != nil && steps.Kind == yaml.SequenceNode {
			for _, s := range steps.Content {
				add(value(s, "uses"))
			}
		}
	}
	return uses, nil
}

// guardedProd are the environments whose jobs must run pinned code.
var guardedProd = []string{"prod", "dr"}

// prodBound reports whether a job deploys to prod or dr: its environment
// is one of them, a step passes one as its environment input, or it calls
// the reusable workflow, which promotes up to dr unless told otherwise.
func prodBound(job *yaml.Node) bool {
	if env := value(job, "environment"); env != nil {
		if env.Kind == yaml.MappingNode {
			env = value(env, "name")
		}
		if env != nil && slices.Contains(guardedProd, env.Value) {
			return true
		}
	}
	if with := value(job, "with"); with != nil && value(job, "uses") != nil {
		promote := value(with, "promote-to")
		if promote == nil || slices.Contains(guardedProd, promote.Value) {
			return true
		}
	}
	if value(job, "uses") != nil && value(job, "with") == nil {
		return true
	}
	if steps := value(job, "steps"); steps != nil && steps.Kind == yaml.SequenceNode {
		for _, s := range steps.Content {
			if with := value(s, "with"); with != nil {
				if env := value(with, "environment"); env != nil && slices.Contains(guardedProd, env.Value) {
					return true
				}
			}
		}
	}
	return false
}

// value is the value of key in a mapping node, or nil.
func value(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// Unpinned are the prod- or dr-bound uses that name a tag.
func Unpinned(uses []Use) []Use {
	var out []Use
	for _, u := range uses {
		if u.ProdBound && !u.Pinned() {
			out = append(out, u)
		}
	}
	return out
}

// Pin rewrites the lines of uses in data (one workflow file's content) to
// name the commit commits[u.Ref] with the tag in a trailing comment. The
// rest of the file, comments and layout included, is left as it is.
func Pin(data []byte, uses []Use, commits map[string]string) ([]byte, error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	for _, u := range uses {
		commit, ok := commits[u.Ref]
		if !ok {
			return nil, runner.Errorf(runner.InternalError, "no commit resolved for %s@%s", u.Target, u.Ref)
		}
		if u.Line < 1 || u.Line > len(lines) {
			return nil, runner.Errorf(runner.InternalError, "%s:%d is past the end of the file", u.File, u.Line)
		}
		line := string(lines[u.Line-1])
		old := u.Target + "@" + u.Ref
		i := strings.Index(line, old)
		if i < 0 {
			return nil, runner.Errorf(runner.ConfigInvalid, "%s:%d does not hold %s as written; pin it by hand", u.File, u.Line, old)
		}
		// Whatever followed the reference (a comment, a quote) is replaced
		// by the tag comment; a quoted value keeps its closing quote.
		rest := line[i+len(old):]
		quote := ""
		if r := strings.TrimSpace(rest); strings.HasPrefix(r, `"`) || strings.HasPrefix(r, `'`) {
			quote = r[:1]
		}
		eol := ""
		if strings.HasSuffix(line, "\n") {
			eol = "\n"
		}
		lines[u.Line-1] = []byte(line[:i] + u.Target + "@" + commit + quote + " # " + u.Ref + eol)
	}
	return bytes.Join(lines, nil), nil
}

// ResolveTag asks the git remote at url which commit tag names, peeling
// an annotated tag to its commit.
func ResolveTag(ctx context.Context, url, tag string) (string, error) {
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{PeelingOption: git.AppendPeeled})
	if err != nil {
		return "", runner.Errorf(runner.ConfigInvalid, "listing the tags of %s: %w", url, err)
	}
	name := plumbing.NewTagReferenceName(tag)
	var direct, peeled string
	for _, r := range refs {
		switch r.Name() {
		case name:
			direct = r.Hash().String()
		case name + "^{}":
			peeled = r.Hash().String()
		}
	}
	switch {
	case peeled != "":
		return peeled, nil
	case direct != "":
		return direct, nil
	}
	return "", runner.Errorf(runner.ConfigInvalid, "%s has no tag %q", url, tag)
}

// String is how a use is named in messages.
func (u Use) String() string {
	return fmt.Sprintf("%s:%d: job %s uses %s@%s", u.File, u.Line, u.Job, u.Target, u.Ref)
}
