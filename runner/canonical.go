package runner

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Canonical serializes v as compact JSON with object keys sorted and no HTML
// escaping, so equal values always give equal bytes: digests and signatures
// depend on it.
//
// v is marshalled with encoding/json, decoded into a generic value
// (numbers as json.Number, so they keep their text) and marshalled again,
// which sorts every object's keys, keeps the last of duplicate keys and
// writes strings as the encoder does. Events, outbox lines, plan digests
// and signed claims already on disk were made exactly so
// (testdata/canonical-v1.golden and the evidence fixture hold the bytes).
func Canonical(v any) ([]byte, error) {
	first, err := marshalNoEscape(v)
	if err != nil {
		return nil, err
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(first))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("re-reading JSON: %w", err)
	}
	return marshalNoEscape(generic)
}

// Digest is the lowercase hex sha256 of v's canonical serialization.
func Digest(v any) (string, error) {
	b, err := Canonical(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// marshalNoEscape encodes v with encoding/json, leaving <, > and & as they
// are, and returns the bytes without the encoder's newline.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
