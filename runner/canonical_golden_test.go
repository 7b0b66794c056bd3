package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
)

// testdata/canonical-v1.golden holds what Canonical gave for each case
// below when it was written, before Canonical was reimplemented: events,
// claims, statements and plan digests already signed were made with those
// bytes, so Canonical must give them exactly, whatever it is made of. Like
// the fixture evidence repo, the file is written once and never by a
// later Canonical; the flag is for that first writing only.
var writeCanonicalV1 = flag.Bool("write-canonical-v1", false, "write testdata/canonical-v1.golden from today's Canonical (once)")

const canonicalGolden = "testdata/canonical-v1.golden"

// maxNestingDepth is encoding/json's limit on nested arrays and objects: a
// Go value nested deeper marshals but does not decode again, so Canonical
// refuses it.
const maxNestingDepth = 10000

// canonicalCases names every input: the values of canonicalValues, and
// each raw case alone, inside a struct whose fields are out of order, as
// a map value and as an event's data.
func canonicalCases() map[string]any {
	out := canonicalValues()
	for i, raw := range append(rawCases, escapeCases()...) {
		r := json.RawMessage(raw)
		out[fmt.Sprintf("raw %d", i)] = r
		out[fmt.Sprintf("raw %d in struct", i)] = rawHolder{B: "b", Raw: r, A: "a"}
		out[fmt.Sprintf("raw %d in map", i)] = map[string]any{"z": 1, "raw": r, "\u0041": r}
		out[fmt.Sprintf("raw %d in event", i)] = Event{ID: "e", Data: r}
	}
	return out
}

// TestCanonicalGoldenV1 holds Canonical to the bytes (or the refusal)
// recorded for every case.
func TestCanonicalGoldenV1(t *testing.T) {
	cases := canonicalCases()
	if *writeCanonicalV1 {
		writeCanonicalGolden(t, cases)
	}
	f, err := os.Open(canonicalGolden)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		name, want, ok := strings.Cut(sc.Text(), "\t")
		v, known := cases[name]
		if !ok || !known {
			t.Fatalf("golden line %q names no case", name)
		}
		seen++
		got, err := Canonical(v)
		switch {
		case want == "ERROR":
			if err == nil {
				t.Errorf("%s: accepted, was refused: %q", name, got)
			}
		case err != nil:
			t.Errorf("%s: %v, was %q", name, err, want)
		case string(got) != want:
			t.Errorf("%s:\n got  %q\n want %q", name, got, want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if seen != len(cases) {
		t.Errorf("the golden file holds %d of %d cases", seen, len(cases))
	}
}

// writeCanonicalGolden writes one line per case, "<name>\t<bytes>" or
// "<name>\tERROR": canonical JSON holds no raw tab or newline.
func writeCanonicalGolden(t *testing.T, cases map[string]any) {
	var b bytes.Buffer
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range cases {
			if !yield(k) {
				return
			}
		}
	}) {
		out, err := Canonical(cases[name])
		if err != nil {
			out = []byte("ERROR")
		}
		if bytes.ContainsAny(out, "\t\n") || strings.ContainsAny(name, "\t\n") {
			t.Fatalf("%s: a tab or newline in the name or output", name)
		}
		fmt.Fprintf(&b, "%s\t%s\n", name, out)
	}
	if err := os.MkdirAll(filepath.Dir(canonicalGolden), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(canonicalGolden, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

type embeddedBase struct {
	Zeta  string `json:"zeta"`
	Alpha int    `json:"alpha,omitempty"`
}

type EmbeddedExported struct {
	Mid string `json:"mid"`
}

type withEmbedded struct {
	embeddedBase
	*EmbeddedExported
	Own     string            `json:"own"`
	Skip    string            `json:"-"`
	Empty   string            `json:"empty,omitempty"`
	Nums    []float64         `json:"nums,omitempty"`
	Raw     json.RawMessage   `json:"raw,omitempty"`
	Tagless string            // field name as key: sorts among lowercase keys by byte
	M       map[string]any    `json:"m"`
	Str     int64             `json:"str,string"`
	Ptr     *string           `json:"ptr"`
	Bytes   []byte            `json:"bytes"`
	Time    time.Time         `json:"time"`
	Nested  map[string][]byte `json:"nested,omitempty"`
}

type rawHolder struct {
	B   string          `json:"b"`
	Raw json.RawMessage `json:"raw"`
	A   string          `json:"a"`
}

// allControl is every byte below 0x20, and DEL, in one string.
func allControl() string {
	var b strings.Builder
	for c := 0; c < 0x20; c++ {
		b.WriteByte(byte(c))
	}
	b.WriteByte(0x7f)
	return b.String()
}

func nestedArrays(depth int) any {
	var v any = "leaf"
	for range depth {
		v = []any{v}
	}
	return v
}

func nestedMaps(depth int) any {
	var v any = 1
	for i := range depth {
		v = map[string]any{"k" + string(rune('a'+i%26)): v, "a": i}
	}
	return v
}

func canonicalValues() map[string]any {
	s := "pointed"
	at := time.Date(2026, 11, 30, 21, 14, 58, 123456789, time.FixedZone("x", 3600))
	big1, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
	ev := Event{
		SpecVersion: "1.0", ID: "0b7d3f5e-1c2a-4e8b-9d6f-2a1b3c4d5e6f", Source: "nova://ci/run", Type: EventPlanCreated,
		Subject: "stacks/app", Time: at, DataContentType: "application/json", RunID: "run-1", ContractID: "app",
		Environment: "prod", Seq: 42, PrevEventHash: strings.Repeat("ab", 32),
		Data: json.RawMessage(`{"planDigest":"abc","changes":{"add":1,"change":0,"destroy":2},"resources":["a.b","c.d"],"reason":"line1\nline2 \"quoted\" <tag> & more"}`),
	}
	stmt := Statement{
		Type: "https://in-toto.io/Statement/v1", Subject: []StatementSubject{{Name: "tfplan", Digest: map[string]string{"sha256": "ff"}}},
		PredicateType: AttestationPredicateType,
		Predicate: AuthorizationPredicate{ContractID: "app", Environment: "prod", PlanDigest: "pd", ContractDigest: "cd", Commit: "c0ffee",
			Approver: "alice", Approvals: []string{"a1", "a2"}, Verdicts: []PCRVerdict{{Engine: "opa", RuleID: "r1", Severity: "high", Result: "pass"}},
			Confidence: &Confidence{Score: 0.875, Threshold: 0.8, PerInput: map[string]ConfidenceInput{"z": {}, "a": {}}}},
	}
	claim := LocalClaim{ID: "id", ContractID: "app", Environment: "prod", PlanDigest: "pd", Approver: "bob", Decision: "approve", Reason: "ok <fine> & well\u2028", At: at}
	plan := &tfjson.Plan{
		FormatVersion: "1.2", TerraformVersion: "1.9.0",
		ResourceChanges: []*tfjson.ResourceChange{{Address: "aws_s3_bucket.b", Type: "aws_s3_bucket", Name: "b",
			Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionCreate}, After: map[string]any{"bucket": "x", "tags": map[string]any{"Z": "1", "a": "2"}}}}},
		OutputChanges: map[string]*tfjson.Change{"url": {Actions: tfjson.Actions{tfjson.ActionNoop}, Before: "http://a?b=1&c=<2>", After: "http://a?b=1&c=<2>"}},
		Variables:     map[string]*tfjson.PlanVariable{"region": {Value: "eu-west-1"}, "count": {Value: 3.0}},
	}
	return map[string]any{
		"event":             ev,
		"event no data":     Event{SpecVersion: "1.0", ID: "x", Time: at},
		"event pointer":     &ev,
		"statement":         stmt,
		"signed claim":      SignedClaim{Claim: claim, Signature: "sig"},
		"claim":             claim,
		"attestation":       AttestationRecord{PredicateType: "p", PlanFile: "/tmp/plan", PlanSHA256: "s", Envelope: Envelope{PayloadType: "t", Payload: "cA==", Signatures: []EnvelopeSignature{{KeyID: "k", Sig: "s"}}}},
		"plan content":      PlanContent{ResourceChanges: []map[string]any{{"address": "a", "change": map[string]any{"actions": []string{"create"}}}}, Configuration: map[string]any{"root_module": map[string]any{}}},
		"plan empty":        PlanContent{},
		"tfjson plan":       plan,
		"redacted target":   (&TargetStack{Stack: "s", Instances: []Instance{{Name: "a", Inputs: map[string]Value{"password": {Type: "string", Value: "hunter2"}}, Wires: map[string]Ref{"x": {Instance: "b", Output: "o"}}}}}).Redacted(),
		"embedded":          withEmbedded{embeddedBase: embeddedBase{Zeta: "z"}, EmbeddedExported: &EmbeddedExported{Mid: "m"}, Own: "o", Skip: "s", Tagless: "T", Str: -7, Ptr: &s, Bytes: []byte{0, 1, 0xff}, Time: at, M: map[string]any{"é": 1, "e": 2, "": 3, "E": 4, "\u00e9\u0301": 5, "<&>": 6, "\u2028": 7, "a\"b": 8, "a\\b": 9, "\x01": 10, "\xff": 11, "\ufffd": 12}},
		"embedded nil ptr":  withEmbedded{Raw: json.RawMessage(` [ 1 , {"b":1,"a":[]} ] `)},
		"nil":               nil,
		"nil map":           map[string]any(nil),
		"empty map":         map[string]any{},
		"empty slice":       []any{},
		"numbers":           []any{0, -0.0, math.Copysign(0, -1), 1e21, 1e-7, 123456789.125, math.MaxInt64, uint64(math.MaxUint64), float32(0.1), big1.String(), json.Number("1E5"), json.Number("1e+05"), json.Number("-0"), json.Number("0.000"), json.Number("123456789012345678901234567890")},
		"nan":               math.NaN(),
		"bad number":        json.Number("1x"),
		"bad raw":           json.RawMessage(`{"a":}`),
		"raw trailing":      json.RawMessage(`1 2`),
		"control chars":     allControl(),
		"control keys":      map[string]string{allControl(): "v", "\t": "tab", "\n": "nl"},
		"line separators":   []string{"\u2028", "\u2029", "a\u2028b\u2029c", "\u2027\u202a"},
		"html":              map[string]string{"<a>": "<b>&amp;</b>", "&": ">"},
		"invalid utf8":      []string{"\xff", "a\xc3", "\xc3\x28", "\xed\xa0\x80", "\xe2\x80", "\xf4\x90\x80\x80", "ok\xffok"},
		"invalid utf8 keys": map[string]int{"\xff": 1, "\xfe": 2, "\ufffd": 3},
		"non ascii":         map[string]string{"日本": "語", "ü": "ö", "\U0001F600": "\U0001F600", "z": "\u00a0"},
		"deep arrays ok":    nestedArrays(maxNestingDepth),
		"deep arrays over":  nestedArrays(maxNestingDepth + 1),
		"deep maps":         nestedMaps(200),
		"deep maps over":    nestedMaps(maxNestingDepth + 1),
		"deep raw over":     json.RawMessage(strings.Repeat("[", maxNestingDepth+1) + strings.Repeat("]", maxNestingDepth+1)),
		"big event":         bigEvent(),
	}
}

// rawCases are json.RawMessage contents: each is checked on its own, inside
// a struct whose fields are out of order, and as a map value.
var rawCases = []string{
	`{ "b" : 1, "a" : 2 }`,
	"{\n\t\"z\": [ 1 ,2, { \"y\" : null , \"x\" : true } ] ,\r\n \"a\":false}",
	`{"a":1,"a":2}`,
	`{"a":{"x":1},"b":0,"a":{"y":2}}`,
	`{"a":1,"\u0061":2}`,
	`{"\u0061":1,"a":2}`,
	`{"\u0041":1,"B":2,"@":3}`,
	`{"B":1,"\u0041":2}`,
	`{"\/":1,"/":2,"\\":3}`,
	`{"\uD83D\uDE00":1,"\uFFFF":2,"\uE000":3}`,
	`{"\ud800":1,"\udc00":2,"\ufffd":3}`,
	`{"é":1,"e\u0301":2,"\u00e9":3}`,
	`{"":1,"\u0000":2," ":3}`,
	`{"a\u2028":1,"a\u2029":2,"a ":3}`,
	"{\"\xff\":1,\"\xfe\":2}",
	`["\u0041\u0042", "\/", "\"", "\\", "\b\f\n\r\t", "\u0000\u001f\u007f", "\u003c\u003e\u0026"]`,
	`["\ud83d\ude00", "\ud83d", "\ude00", "\ud83dx", "\ud83d\u0041", "\ud800\ud800\udc00", "\uDBFF\uDFFF"]`,
	`["\u0008\u000C\u000a\u000b\u001F\u001f\u0020\u2028\u2029\u202A\u202a\u00e9\u00E9\ufffd\u0022\u005c", "\u0009\u000d\u0010\u0001"]`,
	`{"\n":1,"\u000a":2,"\u000b":3,"\"":4,"\u2028":5}`,
	`["\u2028", "\u2029", " ", " "]`,
	"[\"\xff\", \"a\xc3\", \"\xed\xa0\x80\", \"\xe2\x80\xa8\"]",
	`[0, -0, 1E5, 1e+05, 1e-05, 1.50, -1.0e-0, 123456789012345678901234567890, 0.1e1, 1E+999, -9e-999]`,
	`[true,false,null, [] ,{ }, [[]], [{}]]`,
	`"just a string"`,
	`12`,
	`null`,
	`{"x": {"c": 3, "b": {"z": [ {"b":1,"a":2} ], "y": 0}, "a": 1}}`,
	`{"dup":{"b":1,"a":2},"dup":{"d":1,"c":2}}`,
	`{"b":{"a":1,"a":2},"a":[{"z":1,"z":2}]}`,
}

// escapeCases are RawMessages holding one \u escape per string and per key,
// in lower and upper case, for every control byte and for the characters
// the encoder treats specially: a string is copied as is only if all of it
// is already canonical, so one escape per string is what tests each rule.
func escapeCases() []string {
	var cps []int
	for c := 0; c < 0x20; c++ {
		cps = append(cps, c)
	}
	cps = append(cps, ' ', '"', '/', '<', '\\', 0x7f, 0xe9, 0x2027, 0x2028, 0x2029, 0x202a, 0xfffd, 0xd800, 0xdfff)
	var out []string
	for _, cp := range cps {
		for _, format := range []string{`\u%04x`, `\u%04X`} {
			esc := fmt.Sprintf(format, cp)
			out = append(out,
				fmt.Sprintf(`["%s","a%sb"]`, esc, esc),
				fmt.Sprintf(`{"%s":1,"b":2,"%s":3}`, esc, string(rune(cp))),
			)
		}
	}
	for _, short := range []string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`} {
		out = append(out, fmt.Sprintf(`["%s","a%sb"]`, short, short), fmt.Sprintf(`{"%s":1,"b":2}`, short))
	}
	return out
}

func bigEvent() Event {
	data := map[string]any{}
	for i := range 40 {
		data[fmt.Sprintf("resource_%02d", i)] = map[string]any{
			"address": fmt.Sprintf("module.app.aws_instance.web[%d]", i),
			"actions": []string{"update"},
			"changed": []string{"tags", "instance_type"},
			"note":    "changed by \"ci\"\n<auto>",
		}
	}
	raw, err := Canonical(data)
	if err != nil {
		panic(err)
	}
	return Event{
		SpecVersion: "1.0", ID: "0b7d3f5e-1c2a-4e8b-9d6f-2a1b3c4d5e6f", Source: "nova://ci/run", Type: EventPlanCreated,
		Time: time.Date(2026, 11, 30, 21, 0, 0, 0, time.UTC), DataContentType: "application/json", RunID: "run-1",
		ContractID: "app", Environment: "prod", Seq: 7, PrevEventHash: strings.Repeat("0f", 32), Data: raw,
	}
}
