package gitrepo

import (
	"fmt"

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
}

// NewObjects returns an empty set.
func NewObjects() *Objects { return &Objects{st: &memory.NewStorage().ObjectStorage} }

// Put adds an object of type t with content b and returns its hash.
func (o *Objects) Put(t plumbing.ObjectType, b []byte) plumbing.Hash {
	obj := &plumbing.MemoryObject{}
	obj.SetType(t)
	_, _ = obj.Write(b) // cannot fail in memory
	return o.add(obj)
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
