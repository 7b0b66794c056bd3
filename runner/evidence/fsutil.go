package evidence

import (
	"os"
	"path/filepath"
)

// writeFileAtomic replaces path with data so that a crash leaves either the
// old or the new content, never a torn file: write a temporary file, sync
// it, rename it over path, sync the directory.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename or create in dir durable.
func syncDir(dir string) error { return syncPath(dir) }

// syncPath fsyncs the file or directory at path. It is a variable so a
// test can see which paths were made durable: a power cut cannot be
// staged in a test, but a missing sync can be noticed.
var syncPath = func(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
