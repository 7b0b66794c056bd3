package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence"
	"github.com/nova-platform/nova/runner/gitea"
	"github.com/nova-platform/nova/runner/github"
)

// guardedCommands decide from the evidence: a rejection or an apply of
// unknown outcome that a force-push erased would not hold them.
var guardedCommands = []string{"run", "apply", "approve", "reject", "resolve"}

// guardEvidence refuses to decide from an evidence repo whose history
// anyone who may push to it could roll back: moving the branch to an
// earlier signed commit erases a rejection, or an open apply of unknown
// outcome, for every runner that keeps no witness of the heads it pushed
// (every hosted job). The forge must refuse force-pushes to the evidence
// branch, or this runner must keep a witness (a state dir that outlives
// the job). Outside a forge, or with the local evidence repo, the store's
// own witness holds.
func guardEvidence(ctx context.Context, cfg Config, warn io.Writer) error {
	s := cfg.Evidence
	if cfg.Forge == NoForge || s.Local || !slices.Contains(guardedCommands, cfg.Command) || !isURL(s.Repo) {
		// A repository on this machine's disk is the store's own: its
		// witness, beside it, sees a rewrite.
		return nil
	}
	if info, err := os.Stat(evidence.WitnessFile(evidence.StateDirFor(s.Paths.StateBase, s.Repo))); err == nil && info.Size() > 0 {
		return nil
	}
	fail := func(why string) error {
		return runner.Errorf(runner.EvidenceBranchUnprotected, "%s; protect branch %s of the evidence repo against force-push and deletion on the forge, or run on a runner whose --state-dir keeps the evidence witness across jobs", why, s.Branch)
	}
	fc := cfg.ForgeAPI
	owner, repo, ok := forgeRepoOf(s.Repo, fc.ServerURL)
	if !ok {
		return fail("the evidence repo " + redactURL(s.Repo) + " is not a repository of this forge (" + fc.ServerURL + "), so its protection cannot be checked")
	}
	token := firstNonEmpty(s.Creds.Password, fc.Token)
	var guard runner.BranchGuard
	switch cfg.Forge {
	case GitHub:
		c, err := github.New(github.Config{APIURL: fc.APIURL, Token: token, Owner: owner, Repo: repo})
		if err != nil {
			return err
		}
		guard = c
	case Gitea:
		c, err := gitea.New(ctx, gitea.Config{URL: fc.ServerURL, Token: token, Owner: owner, Repo: repo})
		if err != nil {
			return err
		}
		guard = c
	}
	refused, why, err := guard.ForcePushRefused(ctx, owner, repo, s.Branch)
	if err != nil {
		return err
	}
	if !refused {
		return fail(why)
	}
	if why != "" {
		fmt.Fprintf(warn, "nova: %s\n", why)
	}
	return nil
}

// forgeRepoOf names the owner and repository of a clone URL on the forge
// served at server (its web root, as GITHUB_SERVER_URL gives it).
func forgeRepoOf(repoURL, server string) (owner, repo string, ok bool) {
	r, err := url.Parse(repoURL)
	if err != nil {
		return "", "", false
	}
	f, err := url.Parse(server)
	if err != nil || f.Host == "" || !strings.EqualFold(r.Host, f.Host) {
		return "", "", false
	}
	rest, ok := strings.CutPrefix(r.Path, strings.TrimSuffix(f.Path, "/")+"/")
	if !ok {
		return "", "", false
	}
	owner, repo, ok = strings.Cut(strings.TrimSuffix(rest, ".git"), "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return "", "", false
	}
	return owner, repo, true
}

// redactURL drops credentials from a URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(an unreadable URL)"
	}
	return u.Redacted()
}

// isURL tells a remote evidence repo from a path.
func isURL(repo string) bool {
	u, err := url.Parse(repo)
	return err == nil && u.Scheme != "" && u.Host != ""
}
