package runner

import "context"

// Drift: whether what runs still matches what was applied. `nova drift`
// looks two ways. A refresh-only plan finds what changed outside Terraform
// (an instance resized by hand, a bucket policy edited in the console). A
// plan of the configuration last applied finds what no longer matches it
// at all (state edited, a resource re-created or applied with other
// inputs outside Nova) — but only when the contract is unchanged since its
// last apply: a change waiting to be applied is not drift.

// Kinds of drift, as DriftedResource.Kind names them.
const (
	DriftOutside       = "outside"
	DriftConfiguration = "configuration"
)

// DriftRecord is the data of nova.drift.detected and nova.drift.clear.
// It names resources and attributes, never values: events are kept
// forever, and an attribute can hold a secret.
type DriftRecord struct {
	Drifted   bool              `json:"drifted"`
	Resources []DriftedResource `json:"resources,omitempty"`
	// ConfigurationChecked is true when the state was also compared with
	// the configuration last applied; Note says why it was not.
	ConfigurationChecked bool   `json:"configurationChecked"`
	Note                 string `json:"note,omitempty"`
}

// DriftedResource is one resource that drifted.
type DriftedResource struct {
	Address string `json:"address"`
	// Kind is DriftOutside or DriftConfiguration.
	Kind string `json:"kind"`
	// Actions are what terraform saw (update, delete) or would do to
	// reconcile it.
	Actions []string `json:"actions"`
	// Attributes are the names of the top-level attributes that differ.
	Attributes []string `json:"attributes,omitempty"`
}

// IssueTracker keeps one issue per marker on a forge: opened or updated
// while something needs a human (a drifted contract), closed once it no
// longer does. The marker is hidden in the body, so the issue is found
// again whatever its title became.
type IssueTracker interface {
	// UpsertIssue opens an issue with title and body, or updates the open
	// one whose body holds marker.
	UpsertIssue(ctx context.Context, marker, title, body string) error
	// CloseIssue comments on the open issue whose body holds marker and
	// closes it; without one it does nothing.
	CloseIssue(ctx context.Context, marker, comment string) error
}

// AppliedTarget returns the target digest (the contract resolved with its
// modules and values) of the last apply recorded in env, and the run that
// made it; ok is false when nothing was applied there. Drift is measured
// against it: a contract whose target changed since has a change pending,
// which is not drift.
func AppliedTarget(events []Event, env Environment) (digest, runID string, ok bool) {
	validated := map[string]string{}
	for _, e := range events {
		if e.Environment != string(env) {
			continue
		}
		switch e.Type {
		case EventContractValidated:
			var d struct {
				TargetDigest string `json:"targetDigest"`
			}
			if DecodeEventData(e, &d) == nil {
				validated[e.RunID] = d.TargetDigest
			}
		case EventApplyCompleted:
			digest, runID, ok = validated[e.RunID], e.RunID, validated[e.RunID] != ""
		}
	}
	return digest, runID, ok
}
