package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/workflows"
	"github.com/nova-platform/nova/stages/policy/report"
)

// PinFlags are `nova pin`'s flags.
type PinFlags struct {
	// Source is the git remote the tags are resolved at.
	Source string
}

// pinCommand rewrites every prod- or dr-bound use of Nova by tag in the
// repository's workflows to the commit the tag names, with the tag kept as
// a comment. Tags are resolved before any file is written, so a tag that
// cannot be resolved leaves every file as it was.
func pinCommand(ctx context.Context, cfg Config, env Env) error {
	root := repositoryRoot(cfg.Dir)
	uses, err := workflows.Scan(root, novaRepo)
	if err != nil {
		return err
	}
	unpinned := workflows.Unpinned(uses)
	if len(unpinned) == 0 {
		fmt.Fprintf(env.Stdout, "nothing to pin: every prod and dr job in %s uses Nova by commit\n", displayPath(cfg.WorkDir, root))
		return nil
	}
	commits := map[string]string{}
	byFile := map[string][]workflows.Use{}
	var files []string
	for _, u := range unpinned {
		if _, ok := commits[u.Ref]; !ok {
			if commits[u.Ref], err = workflows.ResolveTag(ctx, cfg.Pin.Source, u.Ref); err != nil {
				return err
			}
		}
		if byFile[u.File] == nil {
			files = append(files, u.File)
		}
		byFile[u.File] = append(byFile[u.File], u)
	}
	for _, file := range files {
		path := filepath.Join(root, filepath.FromSlash(file))
		data, err := os.ReadFile(path)
		if err != nil {
			return runner.Errorf(runner.ConfigInvalid, "reading %s: %w", file, err)
		}
		out, err := workflows.Pin(data, byFile[file], commits)
		if err != nil {
			return err
		}
		if err := writeScaffold(scaffoldFile{path, out}); err != nil {
			return err
		}
		for _, u := range byFile[file] {
			fmt.Fprintf(env.Stdout, "pinned %s:%d (job %s): %s@%s → %s\n", u.File, u.Line, u.Job, u.Target, u.Ref, commits[u.Ref])
		}
	}
	return nil
}

// warnExposed reports the workflow jobs that hand Nova's secrets to a run
// a branch pusher can shape: a warning, never a verdict, since where the
// forge keeps a secret is beyond what Nova can read.
func (r *reporter) warnExposed() {
	root := repositoryRoot(r.cfg.Dir)
	found, err := workflows.Exposures(root)
	if err != nil {
		fmt.Fprintf(r.progress, "  warning: could not read the workflows of %s: %v\n", root, err)
		return
	}
	for _, e := range found {
		msg := fmt.Sprintf("job %s reads Nova's secrets, and %s (docs/security.md)", e.Job, e.Why)
		fmt.Fprintf(r.progress, "  warning %s %s:%d: %s\n", runner.WorkflowSecretsExposed, e.File, e.Line, msg)
		if r.cfg.Forge != NoForge {
			file := r.workspacePath(filepath.Join(root, filepath.FromSlash(e.File)))
			fmt.Fprintln(r.progress, report.Annotation{Level: "warning", File: file, Line: e.Line, Title: string(runner.WorkflowSecretsExposed), Message: msg})
		}
	}
}

// warnUnpinned reports the prod- and dr-bound jobs of the repository's
// workflows that use Nova by tag: a warning, never a verdict, since the
// workflow is not what the run decides on.
func (r *reporter) warnUnpinned() {
	root := repositoryRoot(r.cfg.Dir)
	uses, err := workflows.Scan(root, novaRepo)
	if err != nil {
		fmt.Fprintf(r.progress, "  warning: could not read the workflows of %s: %v\n", root, err)
		return
	}
	for _, u := range workflows.Unpinned(uses) {
		msg := fmt.Sprintf("job %s deploys to prod or dr with %s@%s, a tag that can be moved to other code; `nova pin` replaces it with its commit", u.Job, u.Target, u.Ref)
		fmt.Fprintf(r.progress, "  warning %s %s:%d: %s\n", runner.WorkflowActionUnpinned, u.File, u.Line, msg)
		if r.cfg.Forge != NoForge {
			file := r.workspacePath(filepath.Join(root, filepath.FromSlash(u.File)))
			fmt.Fprintln(r.progress, report.Annotation{Level: "warning", File: file, Line: u.Line, Title: string(runner.WorkflowActionUnpinned), Message: msg})
		}
	}
}
