// Package bundle reads and writes the plan bundle: everything the apply job
// needs from the plan job, in one directory.
//
//	bundle.json   the manifest (Manifest)
//	tfplan        the engine's saved plan
//	plan.json     the saved plan in machine-readable form
//	root/         the rendered root module with copies of its modules
package bundle

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/checkout"
)

// Files of a bundle.
const (
	ManifestFile = "bundle.json"
	PlanFile     = "tfplan"
	PlanJSONFile = "plan.json"
	RootDir      = "root"
)

// formatVersion changes whenever the bundle layout does, so an apply job
// never misreads a bundle from another Nova version.
const formatVersion = 2

// Manifest describes a plan bundle and what its digest binds.
type Manifest struct {
	FormatVersion  int                `json:"formatVersion"`
	RunID          string             `json:"runId"`
	ContractID     string             `json:"contractId"`
	Environment    runner.Environment `json:"environment"`
	Stack          string             `json:"stack"`
	ContractDigest string             `json:"contractDigest"`
	Commit         string             `json:"commit"`
	PlanDigest     string             `json:"planDigest"`
	// Engine is the engine that planned, at its exact version ("opentofu
	// 1.12.6"): the apply job runs the same or refuses.
	Engine string `json:"engine"`
	// ForgeRun is the forge's workflow run that planned, when there was
	// one: its environment approvals bind to this bundle only.
	ForgeRun   string               `json:"forgeRun,omitempty"`
	HasChanges bool                 `json:"hasChanges"`
	Changes    runner.ChangeSummary `json:"changes"`
	CreatedAt  time.Time            `json:"createdAt"`
	// Operation is OperationDestroy for a destroy plan: the apply job
	// re-derives the digest with it, so a manifest that says otherwise
	// is refused as a digest mismatch.
	Operation runner.Operation `json:"operation,omitempty"`
}

// Dir is where a run keeps its bundle.
func Dir(runDir string) string { return filepath.Join(runDir, "bundle") }

// WriteManifest writes m into the bundle directory.
func WriteManifest(dir string, m Manifest) error {
	m.FormatVersion = formatVersion
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n'), 0o644)
}

// Limits of what a bundle may hold: a manifest is a few hundred bytes, a
// saved plan of thousands of resources a few hundred megabytes at most.
const (
	maxManifestBytes = 1 << 20
	maxPlanBytes     = 1 << 30
)

// ReadManifest reads a bundle's manifest and checks the bundle is whole:
// every file a regular file inside the bundle, within its size, so a bundle
// whose tfplan is a link to /dev/zero or a FIFO is refused before terraform
// is asked to read it.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := checkout.ReadFile(dir, ManifestFile, maxManifestBytes)
	if err != nil {
		return m, bundleError(dir, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, runner.Errorf(runner.PlanBundleInvalid, "plan bundle manifest %s: %w", dir, err)
	}
	if m.FormatVersion != formatVersion {
		return m, runner.Errorf(runner.PlanBundleInvalid, "plan bundle %s has format %d; this Nova reads format %d", dir, m.FormatVersion, formatVersion)
	}
	plan, err := checkout.Open(dir, PlanFile)
	if err != nil {
		return m, bundleError(dir, err)
	}
	fi, err := plan.Stat()
	plan.Close()
	if err != nil {
		return m, bundleError(dir, err)
	}
	if fi.Size() > maxPlanBytes {
		return m, runner.Errorf(runner.FileTooLarge, "plan bundle %s: %s is larger than %d bytes", dir, PlanFile, int64(maxPlanBytes))
	}
	root, err := checkout.OpenDir(dir, RootDir)
	if err != nil {
		return m, bundleError(dir, err)
	}
	root.Close()
	return m, nil
}

// bundleError keeps the reason of a file refused for where it leads or
// what it is, and calls anything else an invalid bundle.
func bundleError(dir string, err error) error {
	switch runner.ReasonOf(err) {
	case runner.PathOutsideCheckout, runner.FileNotRegular, runner.FileTooLarge:
		return runner.Errorf(runner.ReasonOf(err), "plan bundle %s: %w", dir, err)
	}
	return runner.Errorf(runner.PlanBundleInvalid, "plan bundle %s is incomplete or unreadable: %w", dir, err)
}

// Latest finds the newest bundle under runsDir planned for the given
// contract and environment, for `nova apply` without --bundle.
func Latest(runsDir, contractID string, env runner.Environment) (string, error) {
	entries, err := os.ReadDir(runsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", runner.Errorf(runner.PlanBundleInvalid, "listing runs in %s: %w", runsDir, err)
	}
	type found struct {
		dir string
		at  time.Time
	}
	var all []found
	for _, e := range entries {
		dir := Dir(filepath.Join(runsDir, e.Name()))
		m, err := ReadManifest(dir)
		if err != nil || m.ContractID != contractID || m.Environment != env {
			continue
		}
		all = append(all, found{dir, m.CreatedAt})
	}
	if len(all) == 0 {
		return "", runner.Errorf(runner.PlanBundleInvalid, "no plan bundle for contract %s in %s under %s; run `nova plan` first or pass --bundle", contractID, env, runsDir)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].at.After(all[j].at) })
	return all[0].dir, nil
}
