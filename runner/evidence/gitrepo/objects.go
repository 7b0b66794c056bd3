package gitrepo

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
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

// writeLoose writes o's objects into objects as loose objects, as git
// would, and returns their paths. They are written here rather than
// through go-git's storage so no lock is needed: each is a new file
// renamed into place, and readers find it by its name.
func (o *Objects) writeLoose(objects string) ([]string, error) {
	paths := make([]string, 0, len(o.order))
	for _, h := range o.order {
		hex := h.String()
		path := filepath.Join(objects, hex[:2], hex[2:])
		if _, err := os.Stat(path); err != nil {
			if err := writeLoose(path, o.get(h)); err != nil {
				return nil, fmt.Errorf("writing object %s: %w", hex, err)
			}
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func writeLoose(path string, obj plumbing.EncodedObject) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "tmp_obj_")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	w := objfile.NewWriter(f)
	err = w.WriteHeader(obj.Type(), obj.Size())
	if err == nil {
		var r io.ReadCloser
		if r, err = obj.Reader(); err == nil {
			_, err = io.Copy(w, r)
			r.Close()
		}
	}
	for _, closer := range []io.Closer{w, f} {
		if cerr := closer.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o444)
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
