package runner

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// canonicalSpy keeps what the Emitter handed it.
type canonicalSpy struct {
	events     []Event
	canonicals [][]byte
}

func (c *canonicalSpy) Record(context.Context, Event) error {
	panic("the Emitter must hand a CanonicalRecorder the canonical form")
}

func (c *canonicalSpy) RecordCanonical(_ context.Context, e Event, canonical []byte) error {
	c.events, c.canonicals = append(c.events, e), append(c.canonicals, canonical)
	return nil
}

// The canonical form the Emitter hands over is the event's own, and the
// chain links by its hash: a recorder writing it writes the event's bytes.
func TestEmitterHandsTheEventsCanonicalForm(t *testing.T) {
	spy := &canonicalSpy{}
	em := NewEmitter(Tee{spy}, "urn:test", "run-1", func() time.Time { return time.Unix(1700000000, 0) })
	for i := range 2 {
		if _, err := em.Emit(t.Context(), EventPolicyEvaluated, "c-1", "dev", map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	if len(spy.events) != 2 {
		t.Fatalf("recorded %d events, want 2", len(spy.events))
	}
	for i, e := range spy.events {
		want, err := e.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(spy.canonicals[i], want) {
			t.Errorf("event %d: handed\n%s\nwant\n%s", i, spy.canonicals[i], want)
		}
	}
	hash, err := spy.events[0].Hash()
	if err != nil {
		t.Fatal(err)
	}
	if spy.events[1].PrevEventHash != hash {
		t.Errorf("second event's prev hash %q, want the first's hash %q", spy.events[1].PrevEventHash, hash)
	}
}
