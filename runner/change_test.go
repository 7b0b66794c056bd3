package runner

import (
	"context"
	"testing"
	"time"
)

type digests map[string]string

func (d digests) ContentDigests(*TargetStack) (map[string]string, error) { return d, nil }

type engineVersion string

func (v engineVersion) EngineVersion(context.Context, *Contract) (string, error) {
	return string(v), nil
}

// TestIdentifyChange: the change is the contract's bytes, the registry
// content and the engine's version; an environment whose latest apply was
// this change answers with the receipt, and nothing else does.
func TestIdentifyChange(t *testing.T) {
	w := newWorld(t)
	stage := func(content digests, engine string) *IdentifyChange {
		return &IdentifyChange{Content: content, Engine: engineVersion(engine), Evidence: w}
	}
	state := func(env Environment, file string) *State {
		return &State{Contract: &Contract{ID: contractID, Environment: env}, Target: &TargetStack{}, ContractContent: file}
	}
	base := digests{"module:hello@1.0.0": "aa"}
	run := func(s *IdentifyChange, st *State) Result {
		t.Helper()
		res, err := s.Run(t.Context(), st)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	st := state(Dev, "f1")
	first := run(stage(base, "terraform 1.11.4"), st)
	if first.Done || first.Event != EventChangeIdentified || st.Change == nil || st.Change.ID == "" {
		t.Fatalf("first run: %+v, change %+v", first, st.Change)
	}
	id := st.Change.ID
	// The environment does not change the change.
	changeOf := func(s *IdentifyChange, st *State) string {
		run(s, st)
		return st.Change.ID
	}
	if got := changeOf(stage(base, "terraform 1.11.4"), state(DR, "f1")); got != id {
		t.Errorf("dr's change %s differs from dev's %s", got, id)
	}
	if changeOf(stage(base, "terraform 1.11.4"), state(Dev, "f2")) == id {
		t.Error("another contract, same change")
	}
	if changeOf(stage(digests{"module:hello@1.0.0": "bb"}, "terraform 1.11.4"), state(Dev, "f1")) == id {
		t.Error("a module's content changed, same change")
	}
	if changeOf(stage(base, "terraform 1.11.5"), state(Dev, "f1")) == id {
		t.Error("another terraform, same change")
	}

	w.applied(QA, id)
	got := run(stage(base, "terraform 1.11.4"), state(QA, "f1"))
	if !got.Done || got.Event != EventChangeReceipt {
		t.Fatalf("qa applied the change last: %+v, want its receipt", got)
	}
	if r := got.Data.(ReceiptRecord); r.Change != id || r.Receipt == "" {
		t.Errorf("receipt %+v", r)
	}
	// A drift check found what runs no longer matches: the change is
	// applied again, until the next apply or a clear check.
	em := NewEmitter(w.rec, "urn:test", "drift-check", func() time.Time { return w.now })
	if _, err := em.Emit(t.Context(), EventDriftDetected, contractID, QA, DriftRecord{Drifted: true}); err != nil {
		t.Fatal(err)
	}
	if got := run(stage(base, "terraform 1.11.4"), state(QA, "f1")); got.Done {
		t.Errorf("after drift was detected in qa: %+v, want a plan", got)
	}
	if _, err := em.Emit(t.Context(), EventDriftClear, contractID, QA, DriftRecord{}); err != nil {
		t.Fatal(err)
	}
	if got := run(stage(base, "terraform 1.11.4"), state(QA, "f1")); !got.Done {
		t.Errorf("after a clear drift check: %+v, want the receipt", got)
	}
	// Another change applied since: the environment no longer runs this
	// one, so it is planned again.
	w.applied(QA, "another")
	if got := run(stage(base, "terraform 1.11.4"), state(QA, "f1")); got.Done {
		t.Errorf("after another change was applied in qa: %+v, want a plan", got)
	}
	// Prod never applied it: no receipt.
	if got := run(stage(base, "terraform 1.11.4"), state(Prod, "f1")); got.Done {
		t.Errorf("prod: %+v, want no receipt", got)
	}
}
