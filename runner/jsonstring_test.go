package runner

import (
	"encoding/json"
	"testing"
)

// AppendUnquotedJSON decodes what encoding/json decodes, to the same
// string, and refuses what it refuses.
func FuzzAppendUnquotedJSON(f *testing.F) {
	for _, s := range []string{
		``, `plain`, `\"\\\/\b\f\n\r\t`, `\u0041\u00e9\u2028`, `\ud83d\ude00`, `\ud83d`, `\ude00\ud83d`,
		`\ud83d\u0041`, `\'`, `\x41`, `\u12`, `\u12g4`, `\`, "a\x01b", `a"b`, "\xff\xfe", "é€😀", "\u2029",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		got, ok := AppendUnquotedJSON([]byte("prefix:"), text)
		var want string
		err := json.Unmarshal(append(append([]byte{'"'}, text...), '"'), &want)
		if ok != (err == nil) {
			t.Fatalf("%q: ok=%t, encoding/json says %v", text, ok, err)
		}
		if ok && string(got) != "prefix:"+want {
			t.Fatalf("%q: decoded %q, encoding/json %q", text, got[len("prefix:"):], want)
		}
	})
}
