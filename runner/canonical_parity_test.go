package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

// canonicalOracle is Canonical as it was before the single-pass rewrite:
// marshal, decode into a generic value with UseNumber, marshal again. Every
// digest and signature already recorded was made by it, so the rewrite must
// give its bytes exactly.
func canonicalOracle(v any) ([]byte, error) {
	first, err := marshalNoEscape(new(bytes.Buffer), v)
	if err != nil {
		return nil, err
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(first))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("re-reading JSON: %w", err)
	}
	return marshalNoEscape(new(bytes.Buffer), generic)
}

// checkParity fails unless Canonical and the oracle agree on v: the same
// bytes, or both an error.
func checkParity(t *testing.T, name string, v any) {
	t.Helper()
	want, wantErr := canonicalOracle(v)
	got, gotErr := Canonical(v)
	if (wantErr != nil) != (gotErr != nil) {
		t.Errorf("%s: error %v, oracle error %v", name, gotErr, wantErr)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", name, got, want)
	}
}

func TestCanonicalMatchesOracle(t *testing.T) {
	for name, v := range canonicalValues() {
		checkParity(t, name, v)
	}
	for i, raw := range append(rawCases, escapeCases()...) {
		r := json.RawMessage(raw)
		checkParity(t, fmt.Sprintf("raw %d", i), r)
		checkParity(t, fmt.Sprintf("raw %d in struct", i), rawHolder{B: "b", Raw: r, A: "a"})
		checkParity(t, fmt.Sprintf("raw %d in map", i), map[string]any{"z": 1, "raw": r, "\u0041": r})
		checkParity(t, fmt.Sprintf("raw %d in event", i), Event{ID: "e", Data: r})
	}
}

// TestCanonicalErrorsLikeOracle pins that the inputs the old implementation
// refused are still refused, not just that the two agree.
func TestCanonicalErrorsLikeOracle(t *testing.T) {
	for _, name := range []string{"nan", "bad number", "bad raw", "raw trailing", "deep arrays over", "deep maps over", "deep raw over"} {
		v := canonicalValues()[name]
		if _, err := canonicalOracle(v); err == nil {
			t.Fatalf("%s: the oracle accepts it; the case tests nothing", name)
		}
		if _, err := Canonical(v); err == nil {
			t.Errorf("%s: Canonical accepts what was refused", name)
		}
	}
	if _, err := Canonical(nestedArrays(maxNestingDepth)); err != nil {
		t.Errorf("nesting at the limit refused: %v", err)
	}
}

func FuzzCanonicalParity(f *testing.F) {
	for _, raw := range append(rawCases, escapeCases()...) {
		f.Add([]byte(raw))
	}
	for _, v := range []any{canonicalValues()["event"], canonicalValues()["statement"], canonicalValues()["tfjson plan"], canonicalValues()["embedded"], bigEvent()} {
		b, err := json.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"a":"\u2028","A":"\ud800\udc00","b":[1,2,{"c":"\u0000"}]}`))
	f.Add([]byte("\"\xff\xfe\xe2\x80\xa9\""))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := json.RawMessage(data)
		checkParity(t, "raw", r)
		checkParity(t, "raw in struct", rawHolder{B: "b", Raw: r, A: "a"})
		checkParity(t, "raw in map", map[string]any{"z": 1, "raw": r, "a": []any{r, string(data)}})
		// The bytes as a Go string and a map key exercise the encoder's own
		// escaping of arbitrary (often invalid) UTF-8.
		checkParity(t, "string", map[string]string{string(data): string(data), "k": "v"})
	})
}

func BenchmarkCanonical(b *testing.B) {
	ev := bigEvent()
	for _, impl := range []struct {
		name string
		fn   func(any) ([]byte, error)
	}{{"oracle", canonicalOracle}, {"new", Canonical}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := impl.fn(ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCanonicalResultsOutliveTheCall pins that a result shares no memory
// with the pooled scratch: later calls, here and on other goroutines, must
// leave it as it was.
func TestCanonicalResultsOutliveTheCall(t *testing.T) {
	values := canonicalValues()
	ev := values["event"]
	want, err := canonicalOracle(ev)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Canonical(ev)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for _, name := range []string{"embedded", "statement", "big event", "raw trailing", "control keys"} {
				checkParity(t, name, values[name])
			}
		})
	}
	wg.Wait()
	if !bytes.Equal(got, want) {
		t.Errorf("an earlier result changed under later calls:\n got  %q\n want %q", got, want)
	}
}
