package terraform

import (
	"path/filepath"
	"slices"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/nova-platform/nova/runner"
)

func TestBackend(t *testing.T) {
	contract := func(b *runner.Backend) *runner.Contract {
		return &runner.Contract{ID: "c-1", Environment: runner.QA, Backend: b}
	}
	tests := []struct {
		name     string
		cfg      Engine
		contract *runner.Contract
		wantType string
		want     []string
		reason   runner.Reason
	}{
		{"default local state per contract and environment", Engine{StateDir: "/s"}, contract(nil), "local",
			[]string{"path=" + filepath.Join("/s", "c-1", "qa", "terraform.tfstate")}, ""},
		{"contract backend passes through", Engine{StateDir: "/s"}, contract(&runner.Backend{Type: "s3", Config: map[string]string{"key": "k", "bucket": "b"}}), "s3",
			[]string{"bucket=b", "key=k"}, ""},
		{"flags win over the contract", Engine{StateDir: "/s", BackendType: "gcs", BackendConfig: []string{"bucket=ops"}}, contract(&runner.Backend{Type: "s3"}), "gcs",
			[]string{"bucket=ops"}, ""},
		{"operator may place local state", Engine{StateDir: "/s", BackendConfig: []string{"path=/elsewhere.tfstate"}}, contract(nil), "local",
			[]string{"path=/elsewhere.tfstate"}, ""},
		{"contract may not place local state", Engine{StateDir: "/s"}, contract(&runner.Backend{Type: "local", Config: map[string]string{"path": "/s/c-1/prod/terraform.tfstate"}}), "", nil, runner.BackendConfigInvalid},
		{"malformed flag", Engine{StateDir: "/s", BackendConfig: []string{"secret-token-without-equals"}}, contract(nil), "", nil, runner.BackendConfigInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, entries, err := tt.cfg.Backend(tt.contract)
			if tt.reason != "" {
				if runner.ReasonOf(err) != tt.reason {
					t.Fatalf("err = %v, want %s", err, tt.reason)
				}
				return
			}
			if err != nil || typ != tt.wantType || !slices.Equal(entries, tt.want) {
				t.Errorf("Backend = %q %q %v, want %q %q", typ, entries, err, tt.wantType, tt.want)
			}
		})
	}
}

func TestHasChangesAndSummary(t *testing.T) {
	change := func(addr string, a ...tfjson.Action) *tfjson.ResourceChange {
		return &tfjson.ResourceChange{Address: addr, Change: &tfjson.Change{Actions: a}}
	}
	p := &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{
		change("a", tfjson.ActionNoop), change("b", tfjson.ActionRead),
	}}
	if HasChanges(p) {
		t.Error("no-op and read count as changes")
	}
	p.OutputChanges = map[string]*tfjson.Change{"o": {Actions: tfjson.Actions{tfjson.ActionUpdate}}}
	if !HasChanges(p) {
		t.Error("an output change is a change")
	}
	p.ResourceChanges = append(p.ResourceChanges, change("c", tfjson.ActionCreate), change("d", tfjson.ActionDelete, tfjson.ActionCreate),
		change("e", tfjson.ActionUpdate), change("f", tfjson.ActionDelete))
	sum, list := Summarize(p)
	if sum != (runner.ChangeSummary{Add: 2, Change: 1, Destroy: 2, Replace: 1}) || len(list) != 4 {
		t.Errorf("summary %+v, %d listed", sum, len(list))
	}
}
