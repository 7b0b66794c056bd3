// Package plan is the plan stage: it renders the target stack's root module,
// runs terraform init, plan and show, computes the plan digest and leaves a
// plan bundle for the apply stage (or the apply job).
package plan

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/terraform"
)

// Config is what the plan and apply stages need beyond the run state.
type Config struct {
	Registry  *registry.Registry
	Terraform terraform.Options
	// StateDir roots the default local state: each contract and
	// environment gets StateDir/<contractId>/<env>/terraform.tfstate.
	StateDir string
	// BackendType and BackendConfig come from flags and override the
	// contract's backend.
	BackendType   string
	BackendConfig []string
	// Now is the clock for manifests; nil means time.Now.
	Now func() time.Time
}

// Stage is the plan stage.
type Stage struct{ cfg Config }

var _ runner.Stage = (*Stage)(nil)

// New returns the plan stage.
func New(cfg Config) *Stage { return &Stage{cfg: cfg} }

// Name implements runner.Stage.
func (*Stage) Name() string { return "plan" }

// Data is what the stage records in its event.
type Data struct {
	Digest     string               `json:"digest"`
	HasChanges bool                 `json:"hasChanges"`
	Changes    runner.ChangeSummary `json:"changes"`
	Resources  []ResourceChange     `json:"resources,omitempty"`
	BundleDir  string               `json:"bundleDir"`
}

// ResourceChange is one planned change, without its values: events must
// not carry attribute values, which may be secrets.
type ResourceChange struct {
	Address string   `json:"address"`
	Actions []string `json:"actions"`
}

// Run implements runner.Stage.
func (s *Stage) Run(ctx context.Context, st *runner.State) (runner.Result, error) {
	if st.Contract == nil || st.Target == nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "plan reached without a resolved contract")
	}
	bundle := filepath.Join(st.RunDir, "bundle")
	root := filepath.Join(bundle, RootDir)
	backendType, backendConfig, err := s.cfg.Backend(st.Contract)
	if err != nil {
		return runner.Result{}, err
	}
	if err := s.renderRoot(root, st.Target, backendType); err != nil {
		return runner.Result{}, err
	}
	ws, closeLog, err := OpenWorkspace(root, st.RunDir, s.cfg.Terraform)
	if err != nil {
		return runner.Result{}, err
	}
	defer closeLog()
	if err := ws.Init(ctx, backendConfig); err != nil {
		return runner.Result{}, err
	}
	planFile := filepath.Join(bundle, PlanFile)
	hasChanges, err := ws.Plan(ctx, planFile)
	if err != nil {
		return runner.Result{}, err
	}
	p, err := ws.ShowPlan(ctx, planFile)
	if err != nil {
		return runner.Result{}, err
	}
	planJSON, err := runner.Canonical(p)
	if err != nil {
		return runner.Result{}, runner.Errorf(runner.TerraformShowFailed, "encoding plan JSON: %w", err)
	}
	if err := os.WriteFile(filepath.Join(bundle, PlanJSONFile), append(planJSON, '\n'), 0o644); err != nil {
		return runner.Result{}, runner.Errorf(runner.TerraformShowFailed, "writing plan JSON: %w", err)
	}
	st.PlanJSON = planJSON
	digest, err := Digest(p, st.ContractDigest, st.Commit)
	if err != nil {
		return runner.Result{}, err
	}
	hasChanges = hasChanges || HasChanges(p)
	changes, resources := Summarize(p)
	now := s.cfg.Now
	if now == nil {
		now = time.Now
	}
	m := Manifest{
		RunID: st.RunID, ContractID: st.Contract.ID, Environment: st.Contract.Environment, Stack: st.Target.Stack,
		ContractDigest: st.ContractDigest, Commit: st.Commit, PlanDigest: digest,
		HasChanges: hasChanges, Changes: changes, CreatedAt: now().UTC(),
	}
	if err := WriteManifest(bundle, m); err != nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "writing plan bundle manifest: %w", err)
	}
	st.Plan = &runner.Plan{
		Digest: digest, ContractDigest: st.ContractDigest, Commit: st.Commit,
		HasChanges: hasChanges, Changes: changes, BundleDir: bundle,
	}
	summary := fmt.Sprintf("plan %s: %s", runner.ShortDigest(digest), describe(changes))
	if !hasChanges {
		summary = fmt.Sprintf("plan %s: no changes", runner.ShortDigest(digest))
	}
	return runner.Result{
		Verdict: runner.Pass,
		Summary: summary,
		Event:   runner.EventPlanCreated,
		Data:    Data{Digest: digest, HasChanges: hasChanges, Changes: changes, Resources: resources, BundleDir: bundle},
	}, nil
}

// Backend decides the backend type and its -backend-config entries: flags
// win over the contract, and without either the state goes to a local file
// per contract and environment, so two contracts never share state.
func (c Config) Backend(contract *runner.Contract) (string, []string, error) {
	typ := "local"
	var entries []string
	if contract.Backend != nil {
		typ = contract.Backend.Type
		// For the local backend Nova owns the state's location, which is
		// what keeps each contract and environment apart: a contract must
		// not point its dev runs at another environment's state.
		if typ == "local" {
			for _, k := range []string{"path", "workspace_dir"} {
				if _, set := contract.Backend.Config[k]; set {
					return "", nil, runner.Errorf(runner.BackendConfigInvalid, "the contract may not set the local backend's %s; Nova keeps state per contract and environment (operators can pass --backend-config)", k)
				}
			}
		}
		keys := make([]string, 0, len(contract.Backend.Config))
		for k := range contract.Backend.Config {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			entries = append(entries, k+"="+contract.Backend.Config[k])
		}
	}
	if c.BackendType != "" {
		typ = c.BackendType
	}
	for _, e := range c.BackendConfig {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return "", nil, runner.Errorf(runner.BackendConfigInvalid, "backend config %q is not key=value", redact(e))
		}
		entries = append(entries, e)
	}
	if typ == "local" && !slices.ContainsFunc(entries, func(e string) bool { return strings.HasPrefix(e, "path=") }) {
		if c.StateDir == "" {
			return "", nil, runner.Errorf(runner.ConfigInvalid, "no state directory configured for the local backend")
		}
		entries = append(entries, "path="+filepath.Join(c.StateDir, contract.ID, string(contract.Environment), "terraform.tfstate"))
	}
	return typ, entries, nil
}

// redact keeps a malformed backend entry recognisable without echoing what
// may be a credential.
func redact(e string) string {
	if len(e) > 4 {
		return e[:4] + "…"
	}
	return e
}

// renderRoot writes main.tf and copies every module the stack uses.
func (s *Stage) renderRoot(root string, target *runner.TargetStack, backendType string) error {
	if err := os.RemoveAll(root); err != nil {
		return runner.Errorf(runner.RenderFailed, "clearing %s: %w", root, err)
	}
	src, err := terraform.RenderRoot(target, backendType)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return runner.Errorf(runner.RenderFailed, "creating %s: %w", root, err)
	}
	if err := os.WriteFile(filepath.Join(root, "main.tf"), src, 0o644); err != nil {
		return runner.Errorf(runner.RenderFailed, "writing root module: %w", err)
	}
	copied := map[string]bool{}
	for _, inst := range target.Instances {
		dir := terraform.ModuleDir(inst.Module, inst.Version)
		if copied[dir] {
			continue
		}
		copied[dir] = true
		m, ok := s.cfg.Registry.Module(inst.Module)
		if !ok || m.Version != inst.Version {
			return runner.Errorf(runner.ModuleUnknown, "module %s@%s is not in the registry", inst.Module, inst.Version)
		}
		mfs, err := s.cfg.Registry.TerraformFS(m)
		if err != nil {
			return runner.Errorf(runner.RenderFailed, "%w", err)
		}
		if err := copyFS(filepath.Join(root, filepath.FromSlash(dir)), mfs); err != nil {
			return runner.Errorf(runner.RenderFailed, "copying module %s: %w", m.Name, err)
		}
	}
	return nil
}

func copyFS(dst string, src fs.FS) error {
	return fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// OpenWorkspace opens a terraform workspace whose output is appended to
// the run's terraform.log rather than the user's terminal.
func OpenWorkspace(root, runDir string, opts terraform.Options) (*terraform.Workspace, func(), error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, nil, runner.Errorf(runner.ConfigInvalid, "creating run directory: %w", err)
	}
	log, err := os.OpenFile(filepath.Join(runDir, "terraform.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, nil, runner.Errorf(runner.ConfigInvalid, "opening terraform log: %w", err)
	}
	if opts.Log != nil {
		opts.Log = io.MultiWriter(opts.Log, log)
	} else {
		opts.Log = log
	}
	ws, err := terraform.New(root, opts)
	if err != nil {
		log.Close()
		return nil, nil, err
	}
	return ws, func() { log.Close() }, nil
}

// Digest is the plan digest of a saved plan as `terraform show -json`
// reads it; the plan and apply stages must compute it the same way.
func Digest(p *tfjson.Plan, contractDigest, commit string) (string, error) {
	d, err := runner.PlanDigest(runner.PlanContent{
		ResourceChanges: p.ResourceChanges,
		OutputChanges:   p.OutputChanges,
		Configuration:   p.Config,
		Variables:       p.Variables,
	}, contractDigest, commit)
	if err != nil {
		return "", runner.Errorf(runner.InternalError, "computing plan digest: %w", err)
	}
	return d, nil
}

// HasChanges reads from the saved plan itself whether applying it changes
// anything: a resource action other than no-op or read, or an output
// change. Nothing else — a manifest can be edited — may decide to skip an
// apply.
func HasChanges(p *tfjson.Plan) bool {
	for _, rc := range p.ResourceChanges {
		if rc.Change != nil && !rc.Change.Actions.NoOp() && !rc.Change.Actions.Read() {
			return true
		}
	}
	for _, oc := range p.OutputChanges {
		if oc != nil && !oc.Actions.NoOp() {
			return true
		}
	}
	return false
}

// Summarize counts a plan's resource changes the way Terraform's own summary
// does (a replacement is one add and one destroy) and lists them by address.
func Summarize(p *tfjson.Plan) (runner.ChangeSummary, []ResourceChange) {
	var sum runner.ChangeSummary
	var list []ResourceChange
	for _, rc := range p.ResourceChanges {
		if rc.Change == nil {
			continue
		}
		a := rc.Change.Actions
		switch {
		case a.Replace():
			sum.Add++
			sum.Destroy++
			sum.Replace++
		case a.Create():
			sum.Add++
		case a.Update():
			sum.Change++
		case a.Delete():
			sum.Destroy++
		default:
			continue
		}
		actions := make([]string, len(a))
		for i, x := range a {
			actions[i] = string(x)
		}
		list = append(list, ResourceChange{Address: rc.Address, Actions: actions})
	}
	return sum, list
}
