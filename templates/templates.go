// Package templates embeds the templates Nova renders: the Terraform root
// module, the pull request comment, the audit report, and the workflows
// consumers run. Templates only lay out structure; every value placed into
// them is escaped for where it lands: Markdown text by EscapeMarkdown
// (which every other Markdown Nova writes uses too), the report by
// html/template, workflow values by the q function the templates call,
// HCL values by the Terraform adapter through hclwrite.
package templates

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	htmltemplate "html/template"
	"slices"
	"sync"
	"text/template"
)

//go:embed terraform/*.tmpl comment/*.tmpl workflows/*.tmpl init/*.tmpl report/*.tmpl
var files embed.FS

// Each template is parsed on first use, not at package init: every
// command runs every linked package's init, `nova version` included, and
// most commands render none of them.

// TerraformRoot is the template of the root module the Terraform adapter
// renders for a target stack.
var TerraformRoot = sync.OnceValue(func() *template.Template {
	return mustParse("root.tf.tmpl", "{{", "}}", nil, "terraform/root.tf.tmpl")
})

// PRComment is the template of the comment Nova keeps on a pull request,
// one per contract and environment.
var PRComment = sync.OnceValue(func() *template.Template {
	return mustParse("pr.md.tmpl", "{{", "}}", nil, "comment/pr.md.tmpl")
})

// PRSummary is the template of one part of the summary comment that
// stands for many contracts of one environment on a pull request.
var PRSummary = sync.OnceValue(func() *template.Template {
	return mustParse("summary.md.tmpl", "{{", "}}", nil, "comment/summary.md.tmpl")
})

// Scaffold holds the files `nova init` writes besides the workflow:
// contract.yml.tmpl and approvers.yml.tmpl. Values are placed YAML-quoted
// by the caller.
var Scaffold = sync.OnceValue(func() *template.Template {
	return mustParse("init", "[[", "]]", nil, "init/*.tmpl")
})

// mustParse parses the embedded files matching pattern into a set, each
// named by its base name. A missing map key is an error rather than
// text/template's "<no value>", so a renamed key cannot slip into a
// rendered file. The files are fixed at build time and the tests parse
// them all, so an error is a bug in this package.
func mustParse(name, left, right string, funcs template.FuncMap, pattern string) *template.Template {
	return template.Must(template.New(name).Delims(left, right).Funcs(funcs).Option("missingkey=error").ParseFS(files, pattern))
}

// Workflow is what a workflow is rendered from. Key, Dir, Contract and
// EvidenceRepo may be ${{ }} expressions (the reusable workflow's inputs).
type Workflow struct {
	// Name is shown in the forge's Actions tab.
	Name string
	// Key is unique per contract: it names concurrency groups and
	// artifacts, so it holds only letters, digits, '-' and '_' (or is an
	// expression that does).
	Key string
	// Dir is the consumer checkout relative to the repository root;
	// Contract the contract file relative to Dir.
	Dir, Contract string
	// Environments are promoted through in this order.
	Environments []string
	// EvidenceRepo is where events go.
	EvidenceRepo string
	// Action is the container action the GitHub workflows use.
	Action ActionRef
	// Nova is the binary the Gitea workflow runs inline.
	Nova Binary
	// OIDC grants the jobs an id-token, for clouds they log in to with it.
	OIDC bool
	// Keyless signs the evidence with Fulcio certificates for the jobs'
	// id-token instead of the NOVA_SIGNING_KEY secret: the jobs that sign
	// (plan, apply, destroy, rollback) get id-token: write, and only they.
	Keyless bool
	// DefaultBranch is the trusted base on Gitea.
	DefaultBranch string
	// PromoteTo makes the environments optional: each runs only when the
	// named expression (the reusable workflow's input) reaches it.
	PromoteTo string
	// ApplyOn is "merge" when guarded environments apply after the merge
	// (docs/apply-after-merge.md): the pull request's jobs plan and gate
	// them only, and the merge workflow applies the approved plans.
	// Empty (or "pr") applies on the pull request.
	ApplyOn string
	// MaxJobs is the most jobs a fan-out (GitHubFanoutWorkflow,
	// GiteaFanoutWorkflow) runs the contracts in.
	MaxJobs int
}

// ApplyOnMerge is Workflow.ApplyOn for applying after merge.
const ApplyOnMerge = "merge"

// ActionRef is a reference to Nova's container action.
type ActionRef struct {
	// Repo is owner/name; Tag the release tag; Commit the commit the tag
	// names, when known.
	Repo, Tag, Commit string
}

// Uses is the `uses:` value of the action in a job of env: the commit for
// prod and dr when it is known (a tag can be moved to other code, a commit
// cannot), with the tag as a trailing comment; the tag otherwise.
func (a ActionRef) Uses(env string) string {
	if (env == "prod" || env == "dr") && a.Commit != "" {
		return a.Repo + "@" + a.Commit + " # " + a.Tag
	}
	return a.Repo + "@" + a.Tag
}

// Binary is a release of nova fetched by URL and checked by sha256, or,
// without a URL, built from Source at the Version tag, which must be
// Commit.
type Binary struct {
	Version, ReleaseURL, SHA256 string
	Source, Commit              string
}

// Guarded reports whether env waits for approval.
func Guarded(env string) bool { return env != "dev" }

// Workflow templates use [[ ]] so that GitHub's ${{ }} expressions pass
// through as text.
var workflows = sync.OnceValue(func() *template.Template {
	return mustParse("workflows", "[[", "]]", template.FuncMap{
		"q":          quote,
		"guarded":    Guarded,
		"uses":       func(w *Workflow, env string) string { return w.Action.Uses(env) },
		"job":        newJob,
		"destroyJob": newDestroyJob,
		// Destroys go the promotion order backwards.
		"reverse":  func(envs []string) []string { r := slices.Clone(envs); slices.Reverse(r); return r },
		"rollback": func(w *Workflow, job string) rollbackJob { return rollbackJob{W: w, Job: job} },
		// seq is 1 to n: the fixed jobs of a fan-out on a forge that
		// cannot expand a matrix from a job's output.
		"seq": func(n int) string {
			out := make([]int, n)
			for i := range out {
				out[i] = i + 1
			}
			b, _ := json.Marshal(out)
			return string(b)
		},
		// reusable is Nova's reusable workflow file, pinned as the
		// action is for prod.
		"reusable": func(w *Workflow, file string) string {
			ref := w.Action.Repo + "/.github/workflows/" + file + "@"
			if w.Action.Commit != "" {
				return ref + w.Action.Commit + " # " + w.Action.Tag
			}
			return ref + w.Action.Tag
		},
	}, "workflows/*.tmpl")
})

// job is what the plan and apply job templates are rendered from.
type job struct {
	W       *Workflow
	Env     string
	Prev    string
	Guarded bool
	// If is a condition the job's own is prefixed with ("… && ").
	If string
}

// rollbackJob is what a job of the GitHub rollback workflow is rendered
// from: Job is plan or apply.
type rollbackJob struct {
	W   *Workflow
	Job string
}

// newJob is the job of w's i-th environment.
func newJob(w *Workflow, i int) (job, error) {
	if i < 0 || i >= len(w.Environments) {
		return job{}, fmt.Errorf("job: environment %d of %d", i, len(w.Environments))
	}
	j := job{W: w, Env: w.Environments[i], Guarded: Guarded(w.Environments[i])}
	if i > 0 {
		j.Prev = w.Environments[i-1]
	}
	if w.PromoteTo != "" {
		reach, _ := json.Marshal(w.Environments[i:])
		j.If = fmt.Sprintf("contains(fromJSON('%s'), %s) && ", reach, w.PromoteTo)
	}
	return j, nil
}

// newDestroyJob is the destroy job of w's i-th environment: it follows
// the destroy of the environment after it (Prev), as destroys go the
// promotion order backwards. A destroy takes what runs wherever it runs,
// so promote-to (If) does not limit it.
func newDestroyJob(w *Workflow, i int) (job, error) {
	if i < 0 || i >= len(w.Environments) {
		return job{}, fmt.Errorf("destroyJob: environment %d of %d", i, len(w.Environments))
	}
	j := job{W: w, Env: w.Environments[i], Guarded: Guarded(w.Environments[i])}
	if i+1 < len(w.Environments) {
		j.Prev = w.Environments[i+1]
	}
	return j, nil
}

// quote writes s as a YAML double-quoted scalar (JSON's string syntax is a
// subset of it), so no value can end the line or open a mapping.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Workflow kinds RenderWorkflow knows.
const (
	GitHubWorkflow = "github"
	// GitHubReviewWorkflow relays pull request reviews to the GitHub
	// workflow, which GitHub then runs from the default branch
	// (workflow_run); it holds nothing worth taking.
	GitHubReviewWorkflow = "github-review"
	GiteaWorkflow        = "gitea"
	// GitHubRollbackWorkflow and GiteaRollbackWorkflow roll one
	// environment back to an earlier change (workflow_dispatch).
	GitHubRollbackWorkflow = "github-rollback"
	GiteaRollbackWorkflow  = "gitea-rollback"
	// GitHubBreakGlassWorkflow and GiteaBreakGlassWorkflow request
	// break-glass (workflow_dispatch) and approve or revoke it by comment
	// on the request's issue (issue_comment).
	GitHubBreakGlassWorkflow = "github-breakglass"
	GiteaBreakGlassWorkflow  = "gitea-breakglass"
	// GitHubMergeWorkflow and GiteaMergeWorkflow apply, environment by
	// environment, the plans approved on a pull request once it is merged
	// (ApplyOn merge).
	GitHubMergeWorkflow = "github-merge"
	GiteaMergeWorkflow  = "gitea-merge"
	// GitHubQueueWorkflow checks a merge queue's commit against the
	// approved change (merge_group, secretless); Gitea has no merge queue.
	GitHubQueueWorkflow = "github-queue"
	// DeployWorkflow is Nova's reusable workflow (workflow_call), and
	// RollbackWorkflow its reusable rollback.
	DeployWorkflow   = "deploy"
	RollbackWorkflow = "rollback"
	// FanoutWorkflow is Nova's reusable fan-out over many contracts
	// (workflow_call): nova matrix, then a job per contract or per shard.
	FanoutWorkflow = "fanout"
	// GitHubFanoutWorkflow calls the reusable fan-out for a repository's
	// contracts; GiteaFanoutWorkflow is the fan-out inline, in MaxJobs
	// fixed jobs.
	GitHubFanoutWorkflow = "github-fanout"
	GiteaFanoutWorkflow  = "gitea-fanout"
)

// Deploy is what Nova's reusable workflow (workflows-src/deploy.yml) is
// rendered from: every value is one of its inputs.
var Deploy = Workflow{
	Key:          "${{ inputs.name }}",
	Dir:          "${{ inputs.dir }}",
	Contract:     "${{ inputs.contract }}",
	Environments: []string{"dev", "qa", "prod", "dr"},
	EvidenceRepo: "${{ inputs.evidence-repo }}",
	Action:       ActionRef{Repo: "nova-platform/nova", Tag: "v1"},
	PromoteTo:    "inputs.promote-to",
}

// Fanout is what Nova's reusable fan-out (workflows-src/fanout.yml) is
// rendered from. It names no contract: its jobs run the contracts nova
// matrix selects under Dir, and Contract's absence tells the shared
// pull-request job so.
var Fanout = Workflow{
	Dir:          "${{ inputs.dir }}",
	Environments: []string{"dev", "qa", "prod", "dr"},
	EvidenceRepo: "${{ inputs.evidence-repo }}",
	Action:       ActionRef{Repo: "nova-platform/nova", Tag: "v1"},
}

// RenderWorkflow renders the workflow of kind for w.
func RenderWorkflow(kind string, w Workflow) ([]byte, error) {
	if len(w.Environments) == 0 {
		return nil, fmt.Errorf("a workflow needs at least one environment")
	}
	for _, env := range w.Environments {
		if !slices.Contains([]string{"dev", "qa", "prod", "dr"}, env) {
			return nil, fmt.Errorf("environment %q: want dev, qa, prod or dr", env)
		}
	}
	if (kind == GitHubFanoutWorkflow || kind == GiteaFanoutWorkflow) && (w.MaxJobs < 1 || w.MaxJobs > 256) {
		return nil, fmt.Errorf("a fan-out of %d jobs: want 1 to 256", w.MaxJobs)
	}
	var buf bytes.Buffer
	if err := workflows().ExecuteTemplate(&buf, kind+".yml.tmpl", &w); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Report is the audit report page, parsed on first use (commands that
// never render it do not pay for parsing it). html/template escapes every
// value for where it lands: text, attribute, URL or SVG title.
var Report = sync.OnceValues(func() (*htmltemplate.Template, error) {
	return htmltemplate.New("report.html.tmpl").Option("missingkey=error").ParseFS(files, "report/report.html.tmpl")
})
