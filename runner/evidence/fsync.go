package evidence

import (
	"os"

	"github.com/nova-platform/nova/runner/evidence/chain"
)

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

// syncAll fsyncs paths all at once, so the file system can commit them
// together instead of flushing once per path (about a dozen per event).
func syncAll(paths ...string) error {
	return chain.ForEachChunk(len(paths), len(paths), func(_, i, _ int) error { return syncPath(paths[i]) })
}
