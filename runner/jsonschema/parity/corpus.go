package parity

import (
	"encoding/json"
	"math/big"
	"slices"
	"strings"
)

// Shape is what the corpus needs to know of a schema: the property paths
// it defines, and the numbers and lengths it draws lines at.
type Shape struct {
	Paths   [][]string
	Numbers []string
	Lengths []int
}

// ShapeOf reads a schema's shape, following $ref into $defs.
func ShapeOf(schema []byte) (Shape, error) {
	var root map[string]any
	dec := json.NewDecoder(strings.NewReader(string(schema)))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return Shape{}, err
	}
	defs, _ := root["$defs"].(map[string]any)
	var sh Shape
	var walk func(node map[string]any, path []string, depth int)
	walk = func(node map[string]any, path []string, depth int) {
		if depth > 10 {
			return
		}
		if ref, ok := node["$ref"].(string); ok {
			if def, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any); ok {
				walk(def, path, depth+1)
			}
		}
		for _, kw := range []string{"minimum", "maximum", "exclusiveMinimum"} {
			if n, ok := node[kw].(json.Number); ok {
				sh.Numbers = append(sh.Numbers, string(n))
			}
		}
		for _, kw := range []string{"minLength", "maxLength"} {
			if n, ok := node[kw].(json.Number); ok {
				if i, err := n.Int64(); err == nil {
					sh.Lengths = append(sh.Lengths, int(i))
				}
			}
		}
		props, _ := node["properties"].(map[string]any)
		for _, name := range slices.Sorted(mapKeys(props)) {
			p := append(slices.Clip(path), name)
			sh.Paths = append(sh.Paths, p)
			if sub, ok := props[name].(map[string]any); ok {
				walk(sub, p, depth+1)
			}
		}
		if sub, ok := node["additionalProperties"].(map[string]any); ok {
			p := append(slices.Clip(path), "extra")
			sh.Paths = append(sh.Paths, p)
			walk(sub, p, depth+1)
		}
	}
	walk(root, nil, 0)
	return sh, nil
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Values are the values the corpus puts in place of others: each JSON
// type, numbers around the schema's bounds and beyond float64, strings
// around its lengths in one-, two- and four-byte characters, and strings
// that nearly pass each format and pattern Nova's schemas use.
func (sh Shape) Values() []any {
	out := []any{
		nil, true, false, []any{}, []any{"x"}, map[string]any{}, map[string]any{"a": "b"},
		map[string]any{"reason": "CONTRACT_OK"}, map[string]any{"reason": "oops"},
		map[string]any{"ok_name": "1", "Bad Name": "2", "9lives": "3"},
		map[string]any{"type": "s3", "config": map[string]any{"bucket": "b", "n": json.Number("1")}},
	}
	for _, n := range []string{
		"0", "-0", "0.0", "1", "-1", "1.5", "-0.5", "2", "1e2", "1E2", "1.0e2", "100.0", "1e-7", "1e21", "1e400", "-1e400",
		"12345678901234567890123", "-12345678901234567890123", "12345678901234567890123.5",
		"0.30000000000000000000001", "99.99999999999999999999", "100.00000000000000000001",
	} {
		out = append(out, json.Number(n))
	}
	tiny, _ := new(big.Rat).SetString("1e-20")
	for _, b := range sh.Numbers {
		r, ok := new(big.Rat).SetString(b)
		if !ok {
			continue
		}
		for _, d := range []*big.Rat{big.NewRat(0, 1), big.NewRat(1, 1), big.NewRat(-1, 1), big.NewRat(1, 2), big.NewRat(-1, 2), tiny, new(big.Rat).Neg(tiny)} {
			out = append(out, json.Number(decimal(new(big.Rat).Add(r, d))))
		}
	}
	for _, l := range sh.Lengths {
		for _, n := range []int{l - 1, l, l + 1} {
			if n < 0 {
				continue
			}
			for _, r := range []string{"a", "é", "語", "😀"} {
				out = append(out, strings.Repeat(r, n))
			}
			if n > 0 {
				out = append(out, strings.Repeat("a", n-1)+"😀")
			}
		}
	}
	out = append(out,
		"", "a", "A", "x y", "nova/v1", "Nova/v1", "nova/v1 ", "dev", "DEV", "qa", "prod", "dr", "standard", "agentic",
		"rego", "checkov", "critical", "info", "pass", "warn", "confidential", "hello", "Hello", "hello-world", "-hello",
		"hello_world", "9lives", strings.Repeat("a", 63), strings.Repeat("a", 64), "CONTRACT_OK", "CONTRACT__OK", "A1_B2",
		"nova.rule:x/y-z", "checkov.CKV_AWS_20", ".rule", "rule with space", "s3", "S3", "gcs_v2",
		"\x00", "tab\there", "new\nline", "quote'\"", "é", "ñame", "日本", "😀",
		// uuid
		"7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", "7F1E2D3C-4B5A-4968-8776-A5B4C3D2E1F0", "7f1e2d3c4b5a49688776a5b4c3d2e1f0",
		"7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f", "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1fg", "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1é",
		"7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0-0", "{7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0}", "7f1e2d3c-4b5a-4968-877-6a5b4c3d2e1f0",
		// date-time
		"2025-11-29T18:00:00Z", "2025-11-29t18:00:00z", "2025-11-29T18:00:00.123456789Z", "2025-11-29T18:00:00+01:00",
		"2025-11-29T18:00:00-23:59", "2025-11-29T18:00:00+24:00", "2025-11-29T18:00:00.Z", "2025-11-29 18:00:00Z",
		"2025-13-29T18:00:00Z", "2025-02-30T18:00:00Z", "2025-11-29T24:00:00Z", "2025-11-29T18:60:00Z",
		"2016-12-31T23:59:60Z", "2016-12-31T22:59:60-01:00", "2016-12-31T23:59:60+01:00", "2016-12-31T12:00:60Z",
		"2025-11-29T18:00:00", "2025-11-29T18:00:00+0100", "2025-11-29T18:00:00*01:00", "2025-11-29T18-00:00Z",
		"2025-11-29T+1:00:00Z", "2025-11-29T-1:00:00Z", "2025-11-29T18:00:00+-1:00", "2025-11-29T18:00:00+01-00",
		"2025-11-29T18:00:00.5+a1:00", "2025-11-29T18:00:0éZ", "2025-11-2éT18:00:00Z", "20251129T180000Z",
		// uri
		"https://runbooks.example.com/hello", "http://[::1]:8080/x", "http://[fe80::1%25en0]/", "http://::1/", "http://[::1/",
		"http://[1:2:3]/", "mailto:team@example.com", "urn:isbn:0451450523", "relative/path", "/abs/path", "//host/x",
		"https://exa mple.com", "https://example.com/%zz", "http://%41:8080/", ":nope", "https://user@host:99999/",
	)
	return out
}

// decimal writes r as a plain decimal JSON number, exactly.
func decimal(r *big.Rat) string {
	s := r.FloatString(30)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// Mutations derives documents from doc: each value replaced by each of
// values, each property removed, an unknown property added to each
// object, and each of the schema's paths set to each of values (creating
// the objects on the way).
func (sh Shape) Mutations(doc any, values []any) []any {
	var out []any
	var visit func(path []string, v any)
	visit = func(path []string, v any) {
		if len(path) > 0 {
			out = append(out, without(doc, path))
		}
		for _, val := range values {
			out = append(out, with(doc, path, val))
		}
		if m, ok := v.(map[string]any); ok {
			out = append(out, with(doc, append(slices.Clip(path), "unknownField"), "x"), with(doc, append(slices.Clip(path), "Bad Name"), "x"))
			for _, k := range slices.Sorted(mapKeys(m)) {
				visit(append(slices.Clip(path), k), m[k])
			}
		}
	}
	visit(nil, doc)
	for _, p := range sh.Paths {
		for _, val := range values {
			out = append(out, with(doc, p, val))
		}
	}
	return out
}

// with is a copy of doc with the value at path set, objects created or
// replaced on the way as needed.
func with(doc any, path []string, val any) any {
	if len(path) == 0 {
		return val
	}
	m, _ := doc.(map[string]any)
	cp := make(map[string]any, len(m)+1)
	for k, v := range m {
		cp[k] = v
	}
	cp[path[0]] = with(m[path[0]], path[1:], val)
	return cp
}

// without is a copy of doc with the property at path removed.
func without(doc any, path []string) any {
	m, ok := doc.(map[string]any)
	if !ok {
		return doc
	}
	cp := make(map[string]any, len(m))
	for k, v := range m {
		cp[k] = v
	}
	if len(path) == 1 {
		delete(cp, path[0])
	} else if v, ok := cp[path[0]]; ok {
		cp[path[0]] = without(v, path[1:])
	}
	return cp
}
