package terraform

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
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
	// Keys that differ only before NFC (or in their invalid UTF-8) are one
	// key once written, and which of
	// their values survives depends on map order: RenderRoot has never
	// been deterministic for them, so they are not generated.
	seen := map[string]bool{}
	for k := g.r.IntN(6); k > 0; k-- {
		key := g.key()
		if nfc := readBack(key); !seen[nfc] {
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

// readBack is the string HCL reads back from the literal hclwrite writes
// for s: hclwrite writes each invalid UTF-8 byte as U+FFFD, and cty
// normalises to NFC.
func readBack(s string) string { return cty.StringVal(string([]rune(s))).AsString() }

// readBackValue is v, a JSON-shaped contract value, as Terraform reads
// back its literal.
func readBackValue(t *testing.T, v any) cty.Value {
	t.Helper()
	var clean func(any) any
	clean = func(v any) any {
		switch x := v.(type) {
		case string:
			return readBack(x)
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = clean(e)
			}
			return out
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				out[readBack(k)] = clean(e)
			}
			return out
		}
		return v
	}
	cv, err := ctyValue(clean(v))
	if err != nil {
		t.Fatal(err)
	}
	return cv
}

// checkLiterals renders ts and, when it renders, checks that the file has
// exactly the blocks and attributes the stack calls for and that every
// input is a literal which evaluates, with no variables and no functions,
// to the contract's value: no string can add structure, an interpolation
// or a directive. A stack that does not render must fail with
// RENDER_FAILED. It reports whether the stack rendered.
func checkLiterals(t *testing.T, ts *runner.TargetStack, backend string) bool {
	t.Helper()
	src, err := RenderRoot(ts, backend, false)
	if err != nil {
		if runner.ReasonOf(err) != runner.RenderFailed {
			t.Fatalf("RenderRoot: %v, want %s", err, runner.RenderFailed)
		}
		return false
	}
	f, diags := hclsyntax.ParseConfig(src, "main.tf", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("rendered HCL does not parse: %s\n%s", diags, src)
	}
	body := f.Body.(*hclsyntax.Body)
	var got, want []string
	for _, b := range body.Blocks {
		got = append(got, b.Type+" "+strings.Join(b.Labels, " "))
	}
	want = append(want, "terraform ")
	for _, inst := range ts.Instances {
		want = append(want, "module "+inst.Name)
	}
	for _, inst := range ts.Instances {
		for _, out := range inst.Outputs {
			want = append(want, "output "+OutputName(inst.Name, out))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("blocks (-want +got):\n%s\n%s", diff, src)
	}
	if len(body.Attributes) != 0 {
		t.Fatalf("the root body has attributes %v", keys(body.Attributes))
	}
	tf := body.Blocks[0].Body
	var backends []string
	for _, b := range tf.Blocks {
		backends = append(backends, b.Type+" "+strings.Join(b.Labels, " "))
	}
	if wantBackends := []string(nil); backend != "" {
		wantBackends = []string{"backend " + backend}
		if diff := cmp.Diff(wantBackends, backends); diff != "" {
			t.Fatalf("backend (-want +got):\n%s", diff)
		}
	} else if len(backends) != 0 {
		t.Fatalf("a backend appeared: %v", backends)
	}
	for i, inst := range ts.Instances {
		mod := body.Blocks[1+i].Body
		if len(mod.Blocks) != 0 {
			t.Fatalf("module %s has nested blocks", inst.Name)
		}
		wantAttrs := append(slices.Collect(maps.Keys(inst.Inputs)), slices.Collect(maps.Keys(inst.Wires))...)
		wantAttrs = append(wantAttrs, "source")
		slices.Sort(wantAttrs)
		if diff := cmp.Diff(wantAttrs, keys(mod.Attributes)); diff != "" {
			t.Fatalf("module %s attributes (-want +got):\n%s", inst.Name, diff)
		}
		source, diags := mod.Attributes["source"].Expr.Value(nil)
		if wantSource := readBack("./" + ModuleDir(inst.Module, inst.Version)); diags.HasErrors() || source.Type() != cty.String || source.AsString() != wantSource {
			t.Fatalf("module %s source is %#v (%s), want %q", inst.Name, source, diags, wantSource)
		}
		for name, in := range inst.Inputs {
			v, diags := mod.Attributes[name].Expr.Value(nil)
			if diags.HasErrors() {
				t.Fatalf("input %s.%s is not a plain literal: %s\n%s", inst.Name, name, diags, src)
			}
			if want := readBackValue(t, in.Value); !v.RawEquals(want) {
				t.Fatalf("input %s.%s reads back as %#v, want %#v\n%s", inst.Name, name, v, want, src)
			}
		}
		for name, ref := range inst.Wires {
			vars := mod.Attributes[name].Expr.Variables()
			if len(vars) != 1 || vars[0].RootName() != "module" || len(vars[0]) != 3 ||
				vars[0][1].(hcl.TraverseAttr).Name != ref.Instance || vars[0][2].(hcl.TraverseAttr).Name != ref.Output {
				t.Fatalf("wire %s.%s is %v, want module.%s.%s", inst.Name, name, vars, ref.Instance, ref.Output)
			}
		}
	}
	return true
}

// TestGeneratedStacksRenderAsLiterals renders seeded stacks full of the
// characters HCL gives meaning to.
func TestGeneratedStacksRenderAsLiterals(t *testing.T) {
	const cases = 3000
	rendered := 0
	for seed := range uint64(cases) {
		ts, backend := newStackGen(seed).stack()
		if checkLiterals(t, ts, backend) {
			rendered++
		}
	}
	// A stack whose object has a key hclwrite cannot write (a bare `for`
	// first) is refused; most must render, or the literals go untested.
	t.Logf("%d of %d generated stacks rendered", rendered, cases)
	if rendered < cases*3/4 {
		t.Errorf("only %d of %d generated stacks rendered", rendered, cases)
	}
}

// FuzzRenderRoot adds a fuzzed string, object key and number to a
// generated stack.
func FuzzRenderRoot(f *testing.F) {
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
		if readBack(key) == "list" {
			delete(value, key)
		}
		if jsonNumber(num) {
			value["n"] = json.Number(num)
			if readBack(key) == "n" {
				delete(value, key)
			}
		}
		inst.Inputs["fuzzed_s"] = runner.Value{Value: s}
		inst.Inputs["fuzzed_v"] = runner.Value{Value: value}
		checkLiterals(t, ts, backend)
	})
}

// jsonNumber reports whether s is a number encoding/json would hand
// RenderRoot, with an exponent small enough that writing it out in
// full, as hclwrite does, stays cheap.
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

// TestRenderRefusesUnknownValues: a value ctyValue never makes is an
// error, not hclwrite's panic.
func TestRenderRefusesUnknownValues(t *testing.T) {
	for _, v := range []cty.Value{
		cty.UnknownVal(cty.String),
		cty.ObjectVal(map[string]cty.Value{"a": cty.DynamicVal}),
		cty.TupleVal([]cty.Value{cty.True, cty.UnknownVal(cty.Number)}),
	} {
		if s, err := literal(v); err == nil {
			t.Errorf("%s was written as %s", v.GoString(), s)
		}
	}
}
