//go:build !unix

package local

import (
	"context"
	"os"
	"time"
)

// Without flock the run lock is taken at once: one run per contract and
// environment at a time is then the operator's to keep.
func tryFlock(*os.File) (bool, error)                          { return true, nil }
func waitFlock(context.Context, *os.File, time.Duration) error { return nil }
func unflock(*os.File)                                         {}
