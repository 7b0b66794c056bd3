package workflows

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/nova-platform/nova/runner"
)

// Exposure is a job that hands Nova's secrets (NOVA_*) to a run whose
// workflow definition a branch pusher can write: whoever can push a branch
// could then read the keys that sign approvals (docs/security.md).
type Exposure struct {
	File string
	Line int
	Job  string
	Why  string
}

// branchCopy are the events whose runs use the copy of the workflow on the
// branch, pull request or merge group they are about, per forge dir;
// every other event runs the default branch's copy.
var branchCopy = map[string][]string{
	".github/workflows": {"push", "pull_request", "pull_request_review", "pull_request_review_comment", "merge_group", "workflow_dispatch"},
	// Observed on Gitea 1.23 (giteatest/actrunner TestGiteaEventFacts);
	// pull_request_review is left out: it runs the reviewed commit's copy,
	// which the protection docs/security.md asks for keeps an admin's.
	".gitea/workflows": {"push", "pull_request"},
}

// Exposures finds the jobs of the workflows under root that hand Nova's
// secrets to a run a branch pusher can shape:
//
//   - on GitHub, a job that reads them without an environment (they are
//     then repository or organisation secrets, which every workflow of
//     every branch receives), or in a workflow a pull request's or a
//     branch's own copy runs;
//   - on Gitea, a job that reads them in a workflow that push or
//     pull_request runs: the pushed commit's copy, with the repository's
//     secrets.
func Exposures(root string) ([]Exposure, error) {
	var out []Exposure
	err := eachWorkflow(root, func(rel, dir string, data []byte) error {
		found, err := exposures(rel, dir, data)
		out = append(out, found...)
		return err
	})
	return out, err
}

func exposures(file, dir string, data []byte) ([]Exposure, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, runner.Errorf(runner.ConfigInvalid, "%s: %w", file, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	top := doc.Content[0]
	var risky []string
	for _, ev := range events(value(top, "on")) {
		if slices.Contains(branchCopy[dir], ev) {
			risky = append(risky, ev)
		}
	}
	jobs := value(top, "jobs")
	if jobs == nil || jobs.Kind != yaml.MappingNode {
		return nil, nil
	}
	var out []Exposure
	for i := 0; i+1 < len(jobs.Content); i += 2 {
		name, job := jobs.Content[i].Value, jobs.Content[i+1]
		line, ok := novaSecret(job)
		if !ok {
			continue
		}
		e := Exposure{File: file, Line: line, Job: name}
		risky := risky
		if dir == ".github/workflows" && value(job, "environment") != nil {
			// Only someone with write access dispatches a run, on a ref
			// they pick; an environment whose deployment branches are the
			// default branch alone (docs/security.md) gives its secrets to
			// a dispatch of the default branch's copy and refuses every
			// other. Unlike a pull request, no one outside chooses the ref.
			risky = slices.DeleteFunc(slices.Clone(risky), func(ev string) bool { return ev == "workflow_dispatch" })
		}
		switch {
		case len(risky) > 0 && dir == ".gitea/workflows":
			e.Why = fmt.Sprintf("it runs on %s, for which Gitea runs the pushed commit's copy of this workflow with the repository's secrets: a branch pusher's own copy reads them; run Nova on pull_request_target, pull_request_review and issue_comment, and protect .gitea/workflows/** on every branch", strings.Join(risky, ", "))
		case len(risky) > 0:
			e.Why = fmt.Sprintf("it runs on %s, which runs the pull request's or branch's own copy of this workflow: a branch pusher decides what it does with the keys; run Nova on pull_request_target, issue_comment or workflow_run", strings.Join(risky, ", "))
		case dir == ".github/workflows" && value(job, "environment") == nil && value(job, "uses") == nil:
			e.Why = "it reads them without an environment, so they are repository or organisation secrets, which every workflow of every branch receives: keep them as secrets of an environment whose deployment branches are the default branch only, and give the job that environment"
		default:
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// events lists the events of a workflow's on: a name, a list of names or
// a mapping by name.
func events(on *yaml.Node) []string {
	switch {
	case on == nil:
		return nil
	case on.Kind == yaml.ScalarNode:
		return []string{on.Value}
	case on.Kind == yaml.SequenceNode:
		var out []string
		for _, n := range on.Content {
			out = append(out, n.Value)
		}
		return out
	case on.Kind == yaml.MappingNode:
		var out []string
		for i := 0; i < len(on.Content); i += 2 {
			out = append(out, on.Content[i].Value)
		}
		return out
	}
	return nil
}

// novaSecret reports where a job first reads one of Nova's secrets
// (secrets.NOVA_*), or hands it every secret (secrets: inherit).
func novaSecret(job *yaml.Node) (int, bool) {
	if s := value(job, "secrets"); s != nil && s.Kind == yaml.ScalarNode && s.Value == "inherit" {
		return s.Line, true
	}
	var walk func(n *yaml.Node) (int, bool)
	walk = func(n *yaml.Node) (int, bool) {
		if n.Kind == yaml.ScalarNode {
			if strings.Contains(strings.ReplaceAll(n.Value, " ", ""), "secrets.NOVA_") {
				return n.Line, true
			}
			return 0, false
		}
		for _, c := range n.Content {
			if line, ok := walk(c); ok {
				return line, true
			}
		}
		return 0, false
	}
	return walk(job)
}
