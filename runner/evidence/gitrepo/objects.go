package gitrepo

import (
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Objects are the new objects of one commit or of a chain of them, kept
// in memory and private to their writer until a push sends them: building
// commits happens under the writer's lock, pushing them must not.
type Objects struct {
	st    *memory.ObjectStorage
	order []plumbing.Hash
	// prev maps an object to the earlier version of the same tree in the
	// set, which the pack then holds it as a delta of (PutNext).
	prev map[plumbing.Hash]plumbing.Hash
}

// NewObjects returns an empty set.
func NewObjects() *Objects {
	return &Objects{st: &memory.NewStorage().ObjectStorage, prev: map[plumbing.Hash]plumbing.Hash{}}
}

// Put adds an object of type t with content b and returns its hash.
func (o *Objects) Put(t plumbing.ObjectType, b []byte) plumbing.Hash {
	obj := &plumbing.MemoryObject{}
	obj.SetType(t)
	_, _ = obj.Write(b) // cannot fail in memory
	return o.add(obj)
}

// PutNext adds an object like Put, as the next version of prev (the same
// directory one commit earlier). When prev is in the set too, the pack
// stores the object as a delta of it: a batch writes a dozen versions of
// each tree on its events' path, each one entry away from the one before,
// and whole they were most of what a run added to the repo.
func (o *Objects) PutNext(t plumbing.ObjectType, b []byte, prev plumbing.Hash) plumbing.Hash {
	n := len(o.order)
	h := o.Put(t, b)
	if len(o.order) > n && o.st.HasEncodedObject(prev) == nil {
		o.prev[h] = prev // added before h, so written before it
	}
	return h
}

// PutCommit adds c, signature included.
func (o *Objects) PutCommit(c *object.Commit) (plumbing.Hash, error) {
	obj := &plumbing.MemoryObject{}
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encoding commit: %w", err)
	}
	return o.add(obj), nil
}

func (o *Objects) add(obj plumbing.EncodedObject) plumbing.Hash {
	// A batch of commits writes some trees twice (an unchanged directory);
	// a pack must hold each object once.
	if h := obj.Hash(); o.st.HasEncodedObject(h) == nil {
		return h
	}
	h, _ := o.st.SetEncodedObject(obj) // cannot fail in memory
	o.order = append(o.order, h)
	return h
}

func (o *Objects) get(h plumbing.Hash) plumbing.EncodedObject {
	obj, _ := o.st.EncodedObject(plumbing.AnyObject, h) // every hash in order is there
	return obj
}

// Raw returns the content of object h when the set holds it.
func (o *Objects) Raw(h plumbing.Hash) ([]byte, bool) {
	obj, err := o.st.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return nil, false
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, false
	}
	defer rd.Close()
	b, err := io.ReadAll(rd)
	return b, err == nil
}
