package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"

	"github.com/nova-platform/nova/runner"
)

// ContentDigests names what target deploys, by content: the sha256 of the
// stack's file and of every file of each module it uses, keyed
// "stack:<name>@<version>" and "module:<name>@<version>". A version number
// says what the registry calls a module; the digest says what it is, so a
// module edited under the same version is a different change.
func (r *Registry) ContentDigests(target *runner.TargetStack) (map[string]string, error) {
	out := map[string]string{}
	if s, ok := r.stacks[target.Stack]; ok {
		d, err := digestFiles(r.fsys, []string{s.File})
		if err != nil {
			return nil, fmt.Errorf("hashing stack %s: %w", s.Name, err)
		}
		out["stack:"+s.Name+"@"+s.Version] = d
	}
	for _, inst := range target.Instances {
		key := "module:" + inst.Module + "@" + inst.Version
		if _, done := out[key]; done {
			continue
		}
		m, ok := r.modules[inst.Module]
		if !ok || m.Version != inst.Version {
			return nil, runner.Errorf(runner.ModuleUnknown, "module %s@%s is not in the registry", inst.Module, inst.Version)
		}
		var files []string
		err := fs.WalkDir(r.fsys, m.Dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing module %s: %w", m.Name, err)
		}
		d, err := digestFiles(r.fsys, files)
		if err != nil {
			return nil, fmt.Errorf("hashing module %s: %w", m.Name, err)
		}
		out[key] = d
	}
	return out, nil
}

// digestFiles hashes files' paths in the registry and their contents, in
// path order.
func digestFiles(fsys fs.FS, files []string) (string, error) {
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return "", err
		}
		// Length-prefixed, so no two file sets hash alike by moving bytes
		// between a name and a content.
		fmt.Fprintf(h, "%d:%s\n%d:", len(f), f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
