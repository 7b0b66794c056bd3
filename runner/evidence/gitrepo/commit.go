package gitrepo

import (
	"bytes"
	"encoding/hex"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Commit is a commit as the evidence checks read it: its place in the
// history, its tree, its message, and its signature with the bytes the
// signature covers.
type Commit struct {
	Hash         plumbing.Hash
	TreeHash     plumbing.Hash
	ParentHashes []plumbing.Hash
	Message      string
	// PGPSignature is the armored signature of the gpgsig header ("" when
	// the commit has none).
	PGPSignature string
	// Signed is the commit without its signature headers: what git's
	// verify-commit hashes, taken from the stored bytes as they are.
	Signed []byte
}

// FirstParent is the commit's first parent, zero for a root commit.
func (c *Commit) FirstParent() plumbing.Hash {
	if len(c.ParentHashes) == 0 {
		return plumbing.ZeroHash
	}
	return c.ParentHashes[0]
}

// ParseCommit reads the stored commit raw, named h. A commit laid out as
// git and go-git write one (tree, parents, author, committer, then at
// most a gpgsig header, a blank line and the message) is read in one
// pass; anything else goes to go-git's decoder, so both read every commit
// alike. A verify reads every commit of the history, and go-git decodes
// a commit twice to give the signed bytes: about 7 % of its CPU.
func ParseCommit(h plumbing.Hash, raw []byte) (*Commit, error) {
	if c, ok := parseCanonicalCommit(h, raw); ok {
		return c, nil
	}
	return decodeCommit(h, raw)
}

// parseCanonicalCommit reads raw if it is laid out as canonical commits
// are, and reports whether it was.
func parseCanonicalCommit(h plumbing.Hash, raw []byte) (*Commit, bool) {
	c := &Commit{Hash: h}
	rest := raw
	line, rest, ok := headerLine(rest, "tree ")
	if !ok || !hexHash(line, &c.TreeHash) {
		return nil, false
	}
	for bytes.HasPrefix(rest, []byte("parent ")) {
		var p plumbing.Hash
		if line, rest, ok = headerLine(rest, "parent "); !ok || !hexHash(line, &p) {
			return nil, false
		}
		c.ParentHashes = append(c.ParentHashes, p)
	}
	for _, key := range []string{"author ", "committer "} {
		if _, rest, ok = headerLine(rest, key); !ok {
			return nil, false
		}
	}
	sigStart, sigEnd := len(raw)-len(rest), len(raw)-len(rest)
	if bytes.HasPrefix(rest, []byte("gpgsig ")) {
		first, after, ok := headerLine(rest, "gpgsig ")
		if !ok {
			return nil, false
		}
		sig := append(append(make([]byte, 0, 1024), first...), '\n')
		rest = after
		for len(rest) > 0 && rest[0] == ' ' {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				return nil, false
			}
			sig = append(sig, rest[1:i+1]...)
			rest = rest[i+1:]
		}
		c.PGPSignature = string(sig)
		sigEnd = len(raw) - len(rest)
	}
	if len(rest) == 0 || rest[0] != '\n' {
		return nil, false
	}
	c.Message = string(rest[1:])
	c.Signed = make([]byte, 0, len(raw)-(sigEnd-sigStart))
	c.Signed = append(append(c.Signed, raw[:sigStart]...), raw[sigEnd:]...)
	return c, true
}

// headerLine cuts the header line that starts b with key, returning its
// value without the newline.
func headerLine(b []byte, key string) (value, rest []byte, ok bool) {
	if !bytes.HasPrefix(b, []byte(key)) {
		return nil, b, false
	}
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, b, false
	}
	return b[len(key):i], b[i+1:], true
}

func hexHash(b []byte, h *plumbing.Hash) bool {
	if len(b) != 2*len(h) {
		return false
	}
	_, err := hex.Decode(h[:], b)
	return err == nil
}

// decodeCommit reads raw with go-git's decoder, for commits laid out
// otherwise than parseCanonicalCommit reads.
func decodeCommit(h plumbing.Hash, raw []byte) (*Commit, error) {
	o := &plumbing.MemoryObject{}
	o.SetType(plumbing.CommitObject)
	if _, err := o.Write(raw); err != nil {
		return nil, err
	}
	var gc object.Commit
	if err := gc.Decode(o); err != nil {
		return nil, err
	}
	signed := &plumbing.MemoryObject{}
	if err := gc.EncodeWithoutSignature(signed); err != nil {
		return nil, err
	}
	rd, err := signed.Reader()
	if err != nil {
		return nil, err
	}
	payload, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	return &Commit{
		Hash:         h,
		TreeHash:     gc.TreeHash,
		ParentHashes: gc.ParentHashes,
		Message:      gc.Message,
		PGPSignature: gc.PGPSignature,
		Signed:       payload,
	}, nil
}
