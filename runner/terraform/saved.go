package terraform

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/nova-platform/nova/runner"
)

// savedPlan reads what Nova decides on from `terraform show -json` of a
// saved plan: the content the digest covers, whether applying changes
// anything, and a value-free summary of the changes.
func savedPlan(p *tfjson.Plan) (*runner.SavedPlan, error) {
	raw, err := runner.Canonical(p)
	if err != nil {
		return nil, runner.Errorf(runner.TerraformShowFailed, "encoding plan JSON: %w", err)
	}
	changes, resources := Summarize(p)
	return &runner.SavedPlan{
		Content: runner.PlanContent{
			ResourceChanges: p.ResourceChanges,
			OutputChanges:   p.OutputChanges,
			Configuration:   p.Config,
			Variables:       p.Variables,
		},
		JSON:       raw,
		HasChanges: HasChanges(p),
		Changes:    changes,
		Resources:  resources,
		Drift:      Drift(p),
	}, nil
}

// Drift lists what a plan says about drift, by address and attribute name:
// resource_drift (what its refresh found changed outside terraform) and
// resource_changes that are not no-ops (what it would change to match the
// configuration). Values never leave the plan.
func Drift(p *tfjson.Plan) []runner.DriftedResource {
	var out []runner.DriftedResource
	add := func(kind string, rcs []*tfjson.ResourceChange) {
		for _, rc := range rcs {
			if rc.Change == nil || rc.Change.Actions.NoOp() || rc.Change.Actions.Read() {
				continue
			}
			actions := make([]string, len(rc.Change.Actions))
			for i, a := range rc.Change.Actions {
				actions[i] = string(a)
			}
			out = append(out, runner.DriftedResource{Address: rc.Address, Kind: kind, Actions: actions, Attributes: changedAttributes(rc.Change)})
		}
	}
	add(runner.DriftOutside, p.ResourceDrift)
	add(runner.DriftConfiguration, p.ResourceChanges)
	return out
}

// changedAttributes names the top-level attributes whose values differ
// between before and after, or that become known only after apply.
func changedAttributes(c *tfjson.Change) []string {
	before, _ := c.Before.(map[string]any)
	after, _ := c.After.(map[string]any)
	unknown, _ := c.AfterUnknown.(map[string]any)
	names := map[string]bool{}
	for k, v := range before {
		if w, ok := after[k]; !ok || !reflect.DeepEqual(v, w) {
			names[k] = true
		}
	}
	for k, v := range after {
		if w, ok := before[k]; !ok || !reflect.DeepEqual(v, w) {
			names[k] = true
		}
	}
	for k, v := range unknown {
		if v != false {
			names[k] = true
		}
	}
	if after == nil && before != nil {
		return nil // deleted: every attribute went, naming them says nothing
	}
	return slices.Sorted(maps.Keys(names))
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
func Summarize(p *tfjson.Plan) (runner.ChangeSummary, []runner.ResourceChange) {
	var sum runner.ChangeSummary
	var list []runner.ResourceChange
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
		list = append(list, runner.ResourceChange{Address: rc.Address, Actions: actions})
	}
	return sum, list
}

// jsonNumberDecode decodes raw keeping numbers exact, as the rest of Nova
// reads JSON that ends up in events and digests.
func jsonNumberDecode(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}
