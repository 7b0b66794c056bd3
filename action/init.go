package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/schema"
	"github.com/nova-platform/nova/templates"
)

// InitFlags are `nova init`'s flags.
type InitFlags struct {
	Forge Forge
	Stack string
	Name  string
	Force bool
	// ApplyOn is "pr" or "merge" (templates.Workflow.ApplyOn).
	ApplyOn string
	// Keyless writes workflows that sign with the jobs' id-token
	// (templates.Workflow.Keyless).
	Keyless bool
	// Fanout writes the one fan-out workflow of the contracts under the
	// directory, and nothing else.
	Fanout bool
	// How the Gitea workflow obtains nova: a release binary by URL and
	// sha256, else a build of Source at Commit. Empty values are taken
	// from this binary's own build (giteaBinary). NovaReleases is where
	// releases are published (a mirror's address, on a forge that cannot
	// reach GitHub).
	NovaURL, NovaSHA256, NovaSource, NovaCommit, NovaReleases string
}

// novaRepo is where Nova's action and source live.
const (
	novaRepo   = "nova-platform/nova"
	novaSource = "https://github.com/" + novaRepo + ".git"
)

// scaffoldFile is one file `nova init` writes.
type scaffoldFile struct {
	path    string
	content []byte
}

// initCommand scaffolds a consumer: the contract, the approver config, the
// .gitignore entries and the forge's workflow. It writes nothing when any
// of the files exists and --force is not given, so a refusal leaves the
// checkout as it was.
func initCommand(ctx context.Context, cfg Config, env Env) error {
	root := repositoryRoot(cfg.Dir)
	rel, err := filepath.Rel(root, cfg.Dir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return runner.Errorf(runner.ConfigInvalid, "--dir %s is outside its repository %s", cfg.Dir, root)
	}
	if cfg.Init.Fanout {
		return initFanout(ctx, cfg, env, root, filepath.ToSlash(rel))
	}
	reg, err := loadRegistry(cfg.RegistryDir)
	if err != nil {
		return err
	}
	stack, ok := reg.Stack(cfg.Init.Stack)
	if !ok {
		var names []string
		for _, s := range reg.Stacks() {
			names = append(names, s.Name)
		}
		return runner.Errorf(runner.ConfigInvalid, "--stack %q is not in the registry; it has %s", cfg.Init.Stack, strings.Join(names, ", "))
	}
	id := uuid.NewString()
	name := cfg.Init.Name
	if name == "" {
		name = defaultName(cfg.Dir)
	}
	if !scaffoldName().MatchString(name) {
		return runner.Errorf(runner.ConfigInvalid, "--name %q: want lower-case letters, digits and '-' (it names the workflow file and its jobs)", name)
	}
	contract, err := renderContract(stack, id)
	if err != nil {
		return err
	}
	approvers, err := renderTemplate(templates.Scaffold(), "approvers.yml.tmpl", map[string]string{"QA": "[]", "SRE": "[]"})
	if err != nil {
		return err
	}
	wfs, binaryNote, err := renderConsumerWorkflows(ctx, cfg, name, filepath.ToSlash(rel), id)
	if err != nil {
		return err
	}
	files := []scaffoldFile{
		{filepath.Join(cfg.Dir, schema.DefaultContractPath), contract},
		{filepath.Join(cfg.Dir, runner.ApproversFile), approvers},
	}
	for _, wf := range wfs {
		files = append(files, scaffoldFile{filepath.Join(root, wf.path), wf.content})
	}
	if !cfg.Init.Force {
		for _, f := range files {
			if _, err := os.Lstat(f.path); err == nil {
				return runner.Errorf(runner.ConfigInvalid, "%s exists; nova init never overwrites a file without --force", f.path)
			}
		}
	}
	for _, f := range files {
		if err := writeScaffold(f); err != nil {
			return err
		}
	}
	ignores := []string{".nova/runs/"}
	if cfg.Init.Forge == Gitea {
		ignores = append(ignores, "/platform/")
	}
	if err := appendIgnores(filepath.Join(cfg.Dir, ".gitignore"), ignores); err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintf(env.Stdout, "wrote %s\n", displayPath(cfg.WorkDir, f.path))
	}
	if binaryNote != "" {
		fmt.Fprintf(env.Stdout, "\nnova in the workflow: %s\n", binaryNote)
	}
	fmt.Fprint(env.Stdout, nextSteps(cfg, displayPath(cfg.WorkDir, cfg.Dir)))
	return nil
}

var scaffoldName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`) })

// defaultName names a scaffold after its directory.
func defaultName(dir string) string {
	base := strings.ToLower(filepath.Base(dir))
	base = regexp.MustCompile(`[^a-z0-9-]+`).ReplaceAllString(base, "-")
	base = strings.Trim(base, "-")
	if len(base) > 40 {
		base = base[:40]
	}
	if base == "" {
		return "app"
	}
	return base
}

// repositoryRoot is the top of the git worktree holding dir, where the
// forge looks for workflows; dir itself outside git.
func repositoryRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// contractInput is one input of the scaffolded contract.
type contractInput struct {
	Name, Description, Value string
	Required                 bool
}

// renderContract writes a contract for stack with every input of the
// stack: its default where it has one, else a placeholder of its type.
func renderContract(stack *registry.Stack, id string) ([]byte, error) {
	data := struct {
		ID, Stack, StackDescription string
		Inputs                      []contractInput
	}{ID: id, Stack: stack.Name, StackDescription: firstSentence(stack.Description)}
	for _, in := range stack.Inputs {
		ci := contractInput{Name: in.Name, Description: oneLine(in.Description)}
		value := in.Default
		if !in.HasDefault {
			ci.Required = true
			value = placeholder(in.Type)
		}
		raw, err := json.Marshal(value)
		if err != nil {
			return nil, runner.Errorf(runner.InternalError, "stack %s input %s: %w", stack.Name, in.Name, err)
		}
		ci.Value = string(raw)
		data.Inputs = append(data.Inputs, ci)
	}
	return renderTemplate(templates.Scaffold(), "contract.yml.tmpl", data)
}

// firstSentence keeps a description's first sentence, for a comment line.
func firstSentence(s string) string {
	s = oneLine(s)
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// placeholder is a value of type t that no one would mistake for a real
// one.
func placeholder(t registry.Type) any {
	switch t.Kind {
	case "number":
		return 0
	case "bool":
		return false
	case "list", "set":
		return []any{}
	case "map":
		return map[string]any{}
	}
	return "REPLACE-ME"
}

func renderTemplate(t interface {
	ExecuteTemplate(io.Writer, string, any) error
}, name string, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, runner.Errorf(runner.InternalError, "rendering %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// renderConsumerWorkflows renders the forge's workflows for the contract
// at dir (relative to the repository root), each with its path relative
// to the root: on GitHub the workflow and the relay of reviews it runs
// on, on Gitea the one workflow, with a note on how it obtains nova; on
// both the rollback workflow.
func renderConsumerWorkflows(ctx context.Context, cfg Config, name, dir, id string) ([]scaffoldFile, string, error) {
	w := templates.Workflow{
		Name: name, Key: name + "-" + id[:8], Dir: dir, Contract: schema.DefaultContractPath,
		Environments: []string{"dev", "qa", "prod", "dr"},
		EvidenceRepo: "${{ vars.NOVA_EVIDENCE_REPO }}",
		Action:       actionRef(),
		// nova reads the trusted base from origin's HEAD; main is what a
		// new repository on either forge starts with.
		DefaultBranch: "main",
		ApplyOn:       cfg.Init.ApplyOn,
		Keyless:       cfg.Init.Keyless,
	}
	kinds := map[string]string{
		filepath.Join(".github", "workflows", "nova-"+name+".yml"):            templates.GitHubWorkflow,
		filepath.Join(".github", "workflows", "nova-"+name+"-review.yml"):     templates.GitHubReviewWorkflow,
		filepath.Join(".github", "workflows", "nova-"+name+"-rollback.yml"):   templates.GitHubRollbackWorkflow,
		filepath.Join(".github", "workflows", "nova-"+name+"-breakglass.yml"): templates.GitHubBreakGlassWorkflow,
	}
	merge := templates.GitHubMergeWorkflow
	note := ""
	if cfg.Init.Forge == Gitea {
		kinds = map[string]string{
			filepath.Join(".gitea", "workflows", "nova-"+name+".yml"):            templates.GiteaWorkflow,
			filepath.Join(".gitea", "workflows", "nova-"+name+"-rollback.yml"):   templates.GiteaRollbackWorkflow,
			filepath.Join(".gitea", "workflows", "nova-"+name+"-breakglass.yml"): templates.GiteaBreakGlassWorkflow,
		}
		merge = templates.GiteaMergeWorkflow
		var err error
		if w.Nova, note, err = giteaBinary(ctx, cfg.Init, version, buildCommit()); err != nil {
			return nil, "", err
		}
	}
	if w.ApplyOn == templates.ApplyOnMerge {
		dir := filepath.Dir(slices.Sorted(maps.Keys(kinds))[0])
		kinds[filepath.Join(dir, "nova-"+name+"-merge.yml")] = merge
		if cfg.Init.Forge != Gitea {
			kinds[filepath.Join(dir, "nova-"+name+"-queue.yml")] = templates.GitHubQueueWorkflow
		}
	}
	var out []scaffoldFile
	for _, path := range slices.Sorted(maps.Keys(kinds)) {
		data, err := templates.RenderWorkflow(kinds[path], w)
		if err != nil {
			return nil, "", runner.Errorf(runner.InternalError, "rendering %s: %w", path, err)
		}
		out = append(out, scaffoldFile{path, data})
	}
	return out, note, nil
}

var releaseVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`) })

// buildCommit is the commit this binary was built from, when the build
// recorded one and the tree was clean.
func buildCommit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			return ""
		}
	}
	return rev
}

// actionRef is the action a scaffolded workflow uses: this release's tag,
// and its commit for prod and dr when this binary is a release built from
// a clean tree. Otherwise every job uses the tag until `nova pin`.
func actionRef() templates.ActionRef {
	ref := templates.ActionRef{Repo: novaRepo, Tag: "v1"}
	if releaseVersion().MatchString(version) {
		ref.Tag, ref.Commit = version, buildCommit()
	}
	return ref
}

var (
	sha256Hex = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })
	commitHex = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}$`) })
)

// writeScaffold writes one file, creating its directory.
func writeScaffold(f scaffoldFile) error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return runner.Errorf(runner.ConfigInvalid, "creating %s: %w", filepath.Dir(f.path), err)
	}
	if err := os.WriteFile(f.path, f.content, 0o644); err != nil {
		return runner.Errorf(runner.ConfigInvalid, "writing %s: %w", f.path, err)
	}
	return nil
}

// appendIgnores adds the patterns .gitignore lacks, keeping what it has.
func appendIgnores(path string, patterns []string) error {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return runner.Errorf(runner.ConfigInvalid, "reading %s: %w", path, err)
	}
	have := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		have[strings.TrimSpace(line)] = true
	}
	var add strings.Builder
	for _, p := range patterns {
		if !have[p] {
			add.WriteString(p + "\n")
		}
	}
	if add.Len() == 0 {
		return nil
	}
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	if len(data) == 0 {
		data = []byte("# Nova's run records and plan bundles stay on the machine that made them.\n")
	}
	return writeScaffold(scaffoldFile{path, append(data, add.String()...)})
}

// nextSteps are the three things to do after `nova init`.
func nextSteps(cfg Config, dir string) string {
	forgeSteps := "create the Environments nova, qa, prod and dr, each deploying from the default branch alone and holding the secrets the workflow's header lists, and the variable NOVA_EVIDENCE_REPO; merge the workflows to the default branch, then open a pull request"
	if cfg.Init.Forge == Gitea {
		forgeSteps = "set the variable NOVA_EVIDENCE_REPO and the secrets the workflow's header lists, then open a pull request; approvers review it or comment /nova approve <env> <digest>"
	} else if cfg.Init.ApplyOn == templates.ApplyOnMerge {
		forgeSteps += "; with a merge queue, also set the variables NOVA_EVIDENCE_PUBLIC_KEY and NOVA_COMMIT_PUBLIC_KEY and require the check of nova-<name>-queue.yml (docs/apply-after-merge.md)"
	}
	return fmt.Sprintf(`
Next:
  1. nova run --dir %s     plan and apply it in dev on this machine
  2. list who approves qa, prod and dr in %s and merge it to the default branch
  3. %s
`, dir, filepath.Join(dir, runner.ApproversFile), forgeSteps)
}

// displayPath is p relative to the working directory when it is inside it.
func displayPath(wd, p string) string {
	if wd != "" {
		if rel, err := filepath.Rel(wd, p); err == nil && filepath.IsLocal(rel) {
			return rel
		}
	}
	return p
}

// defaultGiteaFanoutJobs is how many jobs the Gitea fan-out has unless
// --max-jobs says otherwise: Gitea cannot expand a matrix from a job's
// output, so each is a fixed job that starts on every run, even with
// nothing to do.
const defaultGiteaFanoutJobs = 8

// initFanout writes the fan-out workflow of the contracts under dir
// (relative to the repository root): on GitHub a caller of Nova's
// reusable fan-out, on Gitea the fan-out inline. Its contracts are
// scaffolded apart (nova init for each, without their own workflows).
func initFanout(ctx context.Context, cfg Config, env Env, root, dir string) error {
	w := templates.Workflow{
		Name: "fanout", Key: "fanout", Dir: dir,
		Environments: []string{"dev", "qa", "prod", "dr"},
		EvidenceRepo: "${{ vars.NOVA_EVIDENCE_REPO }}",
		Action:       actionRef(),
		// As for one contract's workflows: what a new repository on
		// either forge starts with.
		DefaultBranch: "main",
		MaxJobs:       cfg.MaxJobs,
	}
	path, kind, note := filepath.Join(".github", "workflows", "nova-fanout.yml"), templates.GitHubFanoutWorkflow, ""
	if cfg.Init.Forge == Gitea {
		path, kind = filepath.Join(".gitea", "workflows", "nova-fanout.yml"), templates.GiteaFanoutWorkflow
		var err error
		if w.Nova, note, err = giteaBinary(ctx, cfg.Init, version, buildCommit()); err != nil {
			return err
		}
	}
	data, err := templates.RenderWorkflow(kind, w)
	if err != nil {
		return runner.Errorf(runner.InternalError, "rendering %s: %w", path, err)
	}
	f := scaffoldFile{filepath.Join(root, path), data}
	if _, err := os.Lstat(f.path); err == nil && !cfg.Init.Force {
		return runner.Errorf(runner.ConfigInvalid, "%s exists; nova init never overwrites a file without --force", f.path)
	}
	if err := writeScaffold(f); err != nil {
		return err
	}
	if cfg.Init.Forge == Gitea {
		if err := appendIgnores(filepath.Join(root, ".gitignore"), []string{"/platform/"}); err != nil {
			return err
		}
	}
	fmt.Fprintf(env.Stdout, "wrote %s: the contracts under %s in at most %d jobs\n", displayPath(cfg.WorkDir, f.path), dir, cfg.MaxJobs)
	if note != "" {
		fmt.Fprintf(env.Stdout, "\nnova in the workflow: %s\n", note)
	}
	return nil
}
