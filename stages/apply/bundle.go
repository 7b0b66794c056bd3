package apply

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/bundle"
)

// Bundle loads the plan bundle of an earlier `nova plan` into the run, for
// `nova apply` in a separate job. It refuses a bundle made for another
// contract, environment, contract content or commit, and one whose plan
// the evidence does not show passing its evaluation.
type Bundle struct {
	// Dir is the bundle; empty means the newest one for the contract under
	// RunsDir.
	Dir     string
	RunsDir string
	// ExpectDigest, when set, is the plan digest the bundle must carry:
	// the one the plan job published, so a bundle swapped between the
	// jobs (another run's artifact, a stale download) is refused.
	ExpectDigest string
	// Evidence proves that the plan passed its evaluation. A bundle is
	// written before the plan-level rules run, so on its own it proves
	// nothing.
	Evidence runner.EvidenceReader
	// Engine reads the saved plan back, so its digest is checked before
	// the gate is asked to authorize it.
	Engine runner.Engine
	// Merged is set on the merged commit (--merged): the bundle's commit
	// may be the approved plan's, which the merge check (the stage after
	// the change is identified) holds it to.
	Merged bool
}

var _ runner.Stage = (*Bundle)(nil)

// Name implements runner.Stage.
func (*Bundle) Name() string { return "bundle" }

// Run implements runner.Stage.
func (b *Bundle) Run(ctx context.Context, st *runner.State) (runner.Result, error) {
	if st.Contract == nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "bundle reached without a validated contract")
	}
	if b.Evidence == nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "bundle stage has no evidence to check the plan against")
	}
	dir := b.Dir
	if dir == "" {
		var err error
		if dir, err = bundle.Latest(b.RunsDir, st.Contract.ID, st.Contract.Environment); err != nil {
			return runner.Result{}, err
		}
	}
	m, err := bundle.ReadManifest(dir)
	if err != nil {
		return runner.Result{}, err
	}
	var mismatches []runner.Finding
	check := func(what, got, want string) {
		if got != want {
			mismatches = append(mismatches, runner.Finding{Reason: runner.PlanBundleMismatch,
				Message: fmt.Sprintf("bundle %s was planned for %s %q, this run has %q", dir, what, got, want)})
		}
	}
	check("contract", m.ContractID, st.Contract.ID)
	check("environment", string(m.Environment), string(st.Contract.Environment))
	// An engine changed in the contract (or by --engine) would also change
	// the contract digest below; in a bundle of this contract and
	// environment it is named for what it is first.
	if planned, _, _ := strings.Cut(m.Engine, " "); len(mismatches) == 0 && planned != st.Contract.EngineName() {
		res, _ := engineChanged(m.Engine, st.Contract.EngineName(), dir)
		return res, nil
	}
	check("contract digest", m.ContractDigest, st.ContractDigest)
	if !b.Merged {
		check("commit", m.Commit, st.Commit)
	}
	if b.ExpectDigest != "" {
		check("plan digest", m.PlanDigest, b.ExpectDigest)
	}
	if len(mismatches) > 0 {
		return runner.Result{Verdict: runner.Fail, Summary: mismatches[0].Message, Findings: mismatches}, nil
	}
	events, err := b.Evidence.Chain(ctx, st.Contract.ID)
	if err != nil {
		return runner.Result{}, err
	}
	if !runner.PlanCleared(events, st.Contract.Environment, m.PlanDigest) {
		msg := fmt.Sprintf("plan %s (run %s) has no passing plan-level policy and confidence in the evidence; run `nova plan` again and apply a plan that passed", m.PlanDigest, m.RunID)
		return runner.Result{Verdict: runner.Fail, Summary: "plan not cleared: " + runner.ShortDigest(m.PlanDigest),
			Findings: []runner.Finding{{Reason: runner.PlanNotCleared, Message: msg}}}, nil
	}
	// What the plan job found stands for this run: the attestation and the
	// report bind the verdicts the plan was cleared with.
	st.PCRs, st.Confidence = runner.PlanEvaluation(events, st.Contract.Environment, m.PlanDigest)
	planFile := filepath.Join(dir, bundle.PlanFile)
	st.Plan = &runner.Plan{
		Digest: m.PlanDigest, ContractDigest: m.ContractDigest, Commit: m.Commit,
		HasChanges: m.HasChanges, Changes: m.Changes, BundleDir: dir,
		PlanFile: planFile, ForgeRun: m.ForgeRun, Engine: m.Engine, Operation: m.Operation,
	}
	st.Operation = m.Operation
	if receipt := runner.AppliedReceipt(events, st.Contract.Environment, m.PlanDigest); receipt != nil {
		// Applying a plan twice is never right, and terraform would only
		// refuse a stale plan: the replay answers with the first receipt.
		st.Receipt = receipt
		return runner.Result{
			Verdict: runner.Pass,
			Summary: fmt.Sprintf("plan %s was applied by run %s: receipt %s; nothing to do", runner.ShortDigest(m.PlanDigest), receipt.RunID, receipt.ID),
			Event:   runner.EventPlanLoaded,
			Data:    LoadedPlan{Manifest: m, Receipt: receipt.ID},
			Done:    true,
		}, nil
	}
	if res, err := b.verify(ctx, st, planFile); err != nil || res.Verdict != "" {
		st.Plan = nil
		return res, err
	}
	return runner.Result{
		Verdict: runner.Pass,
		Summary: fmt.Sprintf("loaded plan %s from %s (run %s)", runner.ShortDigest(m.PlanDigest), dir, m.RunID),
		Event:   runner.EventPlanLoaded,
		Data:    LoadedPlan{Manifest: m},
	}, nil
}

// LoadedPlan is the data of nova.plan.loaded: the bundle's manifest, and
// the receipt of the earlier apply when the plan was applied before.
type LoadedPlan struct {
	bundle.Manifest
	Receipt string `json:"receipt,omitempty"`
}

// verify reads the saved plan back and checks that it hashes to the digest
// its manifest names, before anything authorizes it: an authorization is
// recorded only for a plan that is what it claims. It returns a result
// with a verdict when the plan is refused.
func (b *Bundle) verify(ctx context.Context, st *runner.State, planFile string) (runner.Result, error) {
	if b.Engine == nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "bundle stage has no engine to read the saved plan with")
	}
	ws, err := b.Engine.Open(ctx, filepath.Join(st.Plan.BundleDir, bundle.RootDir), st.RunDir, st.Contract)
	if err != nil {
		return runner.Result{}, err
	}
	st.Workspace = ws
	sp, err := ws.Show(ctx, planFile)
	if err != nil {
		return runner.Result{}, err
	}
	if res, changed := engineChanged(st.Plan.Engine, sp.Engine, st.Plan.BundleDir); changed {
		return res, nil
	}
	// The manifest's operation is taken at its word here and bound by the
	// digest: a destroy plan whose manifest says otherwise, or the
	// reverse, hashes to a digest nobody planned.
	sp.Content.Operation = st.Plan.Operation
	// The commit the bundle names: this run's, unless Merged lets it be
	// the approved plan's (checked by the merge stage).
	digest, err := sp.Digest(st.ContractDigest, st.Plan.Commit)
	if err != nil {
		return runner.Result{}, err
	}
	if digest != st.Plan.Digest {
		return runner.Result{
			Verdict: runner.Fail,
			Summary: fmt.Sprintf("saved plan hashes to %s, the bundle says %s", runner.ShortDigest(digest), runner.ShortDigest(st.Plan.Digest)),
			Findings: []runner.Finding{{Reason: runner.PlanDigestMismatch,
				Message: fmt.Sprintf("the saved plan in %s hashes to %s, but the bundle was planned as %s; nothing was authorized or applied", st.Plan.BundleDir, digest, st.Plan.Digest)}},
		}, nil
	}
	// The engine vouches for the file it derived the digest from; the
	// apply stage then trusts it by that hash, and reads it again if not.
	st.Plan.FileSHA256, st.Plan.HasChanges, st.Plan.Changes, st.Plan.Resources = sp.FileSHA256, sp.HasChanges, sp.Changes, sp.Resources
	return runner.Result{}, nil
}

// engineChanged refuses a plan made by one engine (or version) that
// another would apply: the plan digest binds the engine, so an approval
// of one engine's plan never authorises another's apply, and the engines
// do not promise to read each other's plan files. now is the engine this
// run has, as a version label or, before it is asked, a name.
func engineChanged(planned, now, bundleDir string) (runner.Result, bool) {
	if planned == now {
		return runner.Result{}, false
	}
	msg := fmt.Sprintf("the plan in %s was made by %s, and this apply would run %s; plan again with the engine that is to apply", bundleDir, orUnknown(planned), now)
	return runner.Result{
		Verdict:  runner.Fail,
		Summary:  fmt.Sprintf("planned by %s, applying with %s", orUnknown(planned), now),
		Findings: []runner.Finding{{Reason: runner.EngineChangedSincePlan, Message: msg}},
	}, true
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown engine"
	}
	return s
}
