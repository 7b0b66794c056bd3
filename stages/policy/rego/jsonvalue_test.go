package rego

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// sameAsOPA holds valueOf to ast.ValueFromReader, the reader it replaces:
// the same value for every JSON text, and a refusal for every text that is
// not one JSON value (ValueFromReader reads the first value and ignores
// what follows; a plan with anything after it is refused here, as conftest
// refuses it).
func sameAsOPA(t *testing.T, data []byte) {
	t.Helper()
	got, err := valueOf(data)
	if !json.Valid(data) {
		if err == nil {
			t.Errorf("valueOf(%q) = %v, want an error: it is not JSON", data, got)
		}
		return
	}
	want, wantErr := ast.ValueFromReader(bytes.NewReader(data))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("valueOf(%.200q): error %v, ValueFromReader: error %v", data, err, wantErr)
	}
	if err == nil && want.Compare(got) != 0 {
		t.Errorf("valueOf(%.200q) = %.300v, ValueFromReader = %.300v", data, got, want)
	}
}

var jsonCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1`, `-1`, `1.5`, `1e3`, `1E+3`, `-2.5e-3`, `12345678901234567890123`, `1e999999999999`,
	`true`, `false`, `null`, ` {"a" : [1, 2, {"b": null}] } `, "\t\n\r[1]\n",
	`{"a": 1, "a": 2}`, `{"a": 1, "b": 2, "a": 3}`, `{"a": {"x": 1}, "a": [2]}`,
	`"\u0070assword"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\\u0070"`, `"\"\/\b\f\n\r\t"`, `"é ü ſ K"`, "\"\xff\xfe\"",
	`{"\u0061": 1, "a": 2}`, `"\ud83d\u0041"`, `"\ude00"`, `"\uD83D\uDE00"`, `"\ud83d\ud83d\ude00"`, `"a\u00e9\u4e2d"`, `"\ud83d\"`,
	"\"\xe2\x82\"", "\"\xed\xa0\x80\"", `"\u00"`, `"\uzzzz"`, `"\'"`,
	// Not JSON, or not only one value.
	``, ` `, `{`, `[`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a: 1}`, `{"a":1}}`, `[1] [2]`, `{} x`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
	`tru`, `nul`, `"abc`, "\"a\x01b\"", `"\x"`, `"\u12"`, `'a'`, `NaN`, `[1 2]`, `{"a":1 "b":2}`,
}

func TestValueOfReadsAsOPADoes(t *testing.T) {
	for _, c := range jsonCases {
		sameAsOPA(t, []byte(c))
	}
	// A large object (duplicates found through a map) and deep nesting.
	var b strings.Builder
	b.WriteString("{")
	for i := range 40 {
		b.WriteString(`"k` + strings.Repeat("x", i%7) + `": ` + strings.Repeat("[", i) + "1" + strings.Repeat("]", i) + ",")
	}
	b.WriteString(`"k": 0}`)
	sameAsOPA(t, []byte(b.String()))
	if _, err := valueOf([]byte(strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1))); err == nil {
		t.Error("nesting deeper than encoding/json allows was read")
	}
}

func FuzzValueOf(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsOPA(t, data)
		// The plan reader must agree with the plain one on any document.
		v, _, err := planValue(data, &suspectScanner{suspectWords: newSuspectWords([]string{"passw"})})
		w, werr := valueOf(data)
		if (err != nil) != (werr != nil) || (err == nil && v.Compare(w) != 0) {
			t.Errorf("planValue and valueOf disagree on %q: %v, %v", data, err, werr)
		}
	})
}
