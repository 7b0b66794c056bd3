package prefault

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// madvPopulateWrite (Linux 5.14) faults a range in as if each page were
// written, in one call; the syscall package has no name for it. An older
// kernel refuses the advice and nothing changes.
const madvPopulateWrite = 23

// Every first touch of a page of the executable's writable mapping (its
// initialised data, 1.5 MB for nova) is a fault, and a copy on write when
// an initialiser stores to it. On the virtual machines CI runners are, a
// fault costs 10–20 µs: `nova version` took ~900 of them and ~30 ms of
// CPU on such a machine, and populating this one mapping up front saved
// ~6 ms of it (docs/benchmarks.md, "Start-up"). Every nova process starts
// this way, a run's as much as `nova version`. The zeroed data after it
// (32 MB of mostly untouched runtime tables) is left to fault as used,
// and so is the code, whose pages may not even be in the page cache.
func init() { populateData() }

func populateData() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return
	}
	for _, line := range bytes.Split(maps, []byte("\n")) {
		// address perms offset dev inode path
		f := bytes.Fields(line)
		if len(f) != 6 || string(f[1]) != "rw-p" || string(f[5]) != exe {
			continue
		}
		lo, hi, _ := bytes.Cut(f[0], []byte("-"))
		start, err1 := strconv.ParseUint(string(lo), 16, 64)
		end, err2 := strconv.ParseUint(string(hi), 16, 64)
		if err1 == nil && err2 == nil && end > start {
			syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), madvPopulateWrite)
		}
	}
}
