package terraform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
)

// pieces are what generated strings and object keys are made of: the
// characters hclwrite escapes, template introducers already escaped or
// split across pieces, characters that are not printable (in and beyond
// the BMP), invalid UTF-8, text that NFC changes, and grapheme clusters
// of several code points, which is what Format measures keys in.
var pieces = []string{
	"", "a", "Z_9", "-", " ", "=", "#", "//", "/*", "<<EOT", "a=b", ",", ":",
	"$", "%", "{", "}", "[", "]", "${", "%{", "$${", "%%{", "${x}", "%{ if x }", "~}",
	`"`, `\`, `\"`, `\\`, `\n`, "\n", "\r", "\r\n", "\t", "\x00", "\x1b", "\x1f", "\x7f",
	"\u0085", "\u00a0", "\u00ad", "\u200b", "\u200d", "\u2028", "\u2029", "\ufeff", "\ufffd",
	"\U000e0041", "\U000f0000", "\U0001f600", "\U0001f1ef\U0001f1f5", "\U0001f468\u200d\U0001f469\u200d\U0001f467",
	"\xff", "\xc3", "\xe2\x82",
	"é", "e\u0301", "\u0301", "\u0300\u0301", "Å", "A\u030a", "\u212b", "ﬁ",
	"日本語", "ｶﾞ", "한국어", "\u1100\u1161\u11a8", "ä½ ", "Ω", "null", "true", "for", "if",
}

// numbers are JSON numbers cty and hclwrite write in other forms than
// JSON's: exponents, negative zero, more digits than a float64 holds.
var numbers = []string{
	"0", "-0", "1", "-1", "0.1", "-0.5", "0.30000000000000004", "1e400", "1E-400", "-1e400",
	"1.5e3", "2e+2", "-7.25e-3", "1e-7", "9007199254740993", "123456789012345678901234567890.5",
	"1.7976931348623157e308", "5e-324", "0.0", "100", "-0.000001", "12e0",
}

// stackGen makes TargetStacks of the shape the planner gives RenderRoot,
// from a seed, so that a failing case can be rebuilt from its seed.
type stackGen struct{ r *rand.Rand }

func newStackGen(seed uint64) *stackGen {
	return &stackGen{rand.New(rand.NewPCG(seed, 0x6e6f7661))}
}

// ident makes a name RenderRoot accepts, of varied lengths so that the
// alignment of = differs from one block to the next.
func (g *stackGen) ident() string {
	const first = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
	const rest = first + "0123456789-"
	b := []byte{first[g.r.IntN(len(first))]}
	for n := g.r.IntN(12); n > 0; n-- {
		b = append(b, rest[g.r.IntN(len(rest))])
	}
	return string(b)
}

func (g *stackGen) str() string {
	var b strings.Builder
	for n := g.r.IntN(5); n > 0; n-- {
		b.WriteString(pieces[g.r.IntN(len(pieces))])
	}
	return b.String()
}

func (g *stackGen) number() string {
	switch g.r.IntN(3) {
	case 0:
		return numbers[g.r.IntN(len(numbers))]
	case 1:
		n := g.r.Int64() >> g.r.IntN(64)
		if g.r.IntN(2) == 0 {
			n = -n
		}
		return strconv.FormatInt(n, 10)
	}
	return strconv.FormatFloat(g.r.NormFloat64()*float64(g.r.IntN(1e6)), 'g', -1, 64)
}

// key makes an object key: sometimes an identifier (written bare),
// sometimes anything (written quoted).
func (g *stackGen) key() string {
	if g.r.IntN(3) == 0 {
		return g.ident()
	}
	return g.str()
}

func (g *stackGen) value(depth int) any {
	n := 4
	if depth > 0 {
		n = 6
	}
	switch g.r.IntN(n) {
	case 0:
		return g.str()
	case 1:
		return json.Number(g.number())
	case 2:
		if g.r.IntN(3) == 0 {
			return nil
		}
		return g.r.IntN(2) == 0
	case 3:
		return g.str()
	case 4:
		list := []any{}
		for k := g.r.IntN(5); k > 0; k-- {
			list = append(list, g.value(depth-1))
		}
		return list
	}
	m := map[string]any{}
	// Keys that differ only before NFC are one key to cty, and which of
	// their values survives depends on map order: RenderRoot has never
	// been deterministic for them, so they are not generated.
	seen := map[string]bool{}
	for k := g.r.IntN(6); k > 0; k-- {
		key := g.key()
		if nfc := cty.StringVal(key).AsString(); !seen[nfc] {
			seen[nfc] = true
			m[key] = g.value(depth - 1)
		}
	}
	return m
}

func (g *stackGen) stack() (*runner.TargetStack, string) {
	t := &runner.TargetStack{Stack: g.ident(), StackVersion: []string{"1.0.0", "2.3.4-rc.1", "0.1.0+build.5"}[g.r.IntN(3)]}
	names := map[string]bool{}
	for n := g.r.IntN(4); n > 0; n-- {
		inst := runner.Instance{Name: g.ident(), Module: g.ident(), Version: "1.0.0", Inputs: map[string]runner.Value{}, Wires: map[string]runner.Ref{}}
		if names[inst.Name] {
			continue
		}
		names[inst.Name] = true
		if g.r.IntN(4) == 0 {
			inst.Module, inst.Version = g.str(), g.str()
		}
		for k := g.r.IntN(7); k > 0; k-- {
			if name := g.ident(); !registry.IsReservedInput(name) {
				inst.Inputs[name] = runner.Value{Value: g.value(3)}
			}
		}
		for k := g.r.IntN(3); k > 0; k-- {
			if name := g.ident(); !registry.IsReservedInput(name) {
				if _, clash := inst.Inputs[name]; !clash {
					inst.Wires[name] = runner.Ref{Instance: g.ident(), Output: g.ident()}
				}
			}
		}
		for k := g.r.IntN(4); k > 0; k-- {
			out := g.ident()
			if !slices.Contains(inst.Outputs, out) {
				inst.Outputs = append(inst.Outputs, out)
				if g.r.IntN(2) == 0 {
					inst.SensitiveOutputs = append(inst.SensitiveOutputs, out)
				}
			}
		}
		t.Instances = append(t.Instances, inst)
	}
	return t, []string{"", "local", "s3"}[g.r.IntN(3)]
}

// renderParity renders t with RenderRoot and with the hclwrite oracle and
// fails unless both give the same bytes, or the same error. It reports
// whether the stack rendered.
func renderParity(t *testing.T, ts *runner.TargetStack, backend string) bool {
	t.Helper()
	want, wantErr := renderRootHCLWrite(ts, backend)
	got, err := RenderRoot(ts, backend)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("RenderRoot error %v, hclwrite's %v; stack %#v", err, wantErr, ts)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("RenderRoot differs from hclwrite (-hclwrite +RenderRoot):\n%s\nstack %#v", diff, ts)
	}
	if err != nil {
		return false
	}
	if f := hclwrite.Format(got); !bytes.Equal(f, got) {
		t.Fatalf("RenderRoot's output is not as hclwrite.Format lays it out (-Format +RenderRoot):\n%s", cmp.Diff(string(f), string(got)))
	}
	return true
}

// TestRenderParity holds RenderRoot to the hclwrite implementation it
// replaced, byte for byte, over generated stacks.
func TestRenderParity(t *testing.T) {
	const cases = 3000
	rendered := 0
	for seed := range uint64(cases) {
		ts, backend := newStackGen(seed).stack()
		if renderParity(t, ts, backend) {
			rendered++
		}
	}
	// Stacks that fail to render (a bare keyword as an object key) only
	// compare errors; most must render, or the bytes go untested.
	t.Logf("%d of %d generated stacks rendered", rendered, cases)
	if rendered < cases*3/4 {
		t.Errorf("only %d of %d generated stacks rendered", rendered, cases)
	}
}

// FuzzRenderParity adds a fuzzed string, object key and number to a
// generated stack.
func FuzzRenderParity(f *testing.F) {
	for seed := range uint64(64) {
		g := newStackGen(seed)
		f.Add(seed, g.str(), g.key(), g.number())
	}
	f.Fuzz(func(t *testing.T, seed uint64, s, key, num string) {
		ts, backend := newStackGen(seed).stack()
		if len(ts.Instances) == 0 {
			ts.Instances = append(ts.Instances, runner.Instance{Name: "fuzzed", Module: "m", Version: "1.0.0"})
		}
		inst := &ts.Instances[0]
		if inst.Inputs == nil {
			inst.Inputs = map[string]runner.Value{}
		}
		value := map[string]any{key: s, "list": []any{s, map[string]any{key: []any{}}}}
		if jsonNumber(num) {
			value["n"] = json.Number(num)
		}
		inst.Inputs["fuzzed_s"] = runner.Value{Value: s}
		inst.Inputs["fuzzed_v"] = runner.Value{Value: value}
		renderParity(t, ts, backend)
	})
}

// jsonNumber reports whether s is a number encoding/json would hand
// RenderRoot, with an exponent small enough that writing it out in
// full, as both implementations do, stays cheap.
func jsonNumber(s string) bool {
	var n json.Number
	if json.Unmarshal([]byte(s), &n) != nil || strings.TrimSpace(s) != s {
		return false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		return len(strings.TrimLeft(s[i+1:], "+-")) <= 4
	}
	return true
}

// TestQuoteMatchesHCLWrite: every code point, alone and before {, is
// escaped as hclwrite escapes it.
func TestQuoteMatchesHCLWrite(t *testing.T) {
	for r := rune(0); r <= 0x10FFFF; r++ {
		if r >= 0x10000 && r%37 != 0 {
			continue // the astral planes are sampled: the rule does not change there
		}
		for _, s := range []string{string(r), string(r) + "{"} {
			s = cty.StringVal(s).AsString()
			if got, want := quoteHCL(s), string(hclwrite.TokensForValue(cty.StringVal(s)).Bytes()); got != want {
				t.Fatalf("quoteHCL(%q) = %s, hclwrite writes %s", s, got, want)
			}
		}
	}
}

// TestNumbersMatchHCLWrite: numbers are written as hclwrite writes them.
func TestNumbersMatchHCLWrite(t *testing.T) {
	for _, n := range numbers {
		v, err := ctyValue(json.Number(n))
		if err != nil {
			t.Fatal(err)
		}
		lines, err := exprLines(v)
		if err != nil {
			t.Fatalf("%s: %v", v.GoString(), err)
		}
		if got, want := indentLines(lines, 1), string(hclwrite.TokensForValue(v).Bytes()); got != want {
			t.Errorf("%s is written %s, hclwrite writes %s", n, got, want)
		}
	}
}

// TestExprLinesRefusesWhatItCannotWrite: a value ctyValue never makes is an
// error, not a guess and not a crash.
func TestExprLinesRefusesWhatItCannotWrite(t *testing.T) {
	for _, v := range []cty.Value{
		cty.UnknownVal(cty.String),
		cty.ObjectVal(map[string]cty.Value{"a": cty.DynamicVal}),
		cty.TupleVal([]cty.Value{cty.True, cty.UnknownVal(cty.Number)}),
	} {
		if lines, err := exprLines(v); err == nil {
			t.Errorf("%s was written as %v", v.GoString(), lines)
		}
	}
}
