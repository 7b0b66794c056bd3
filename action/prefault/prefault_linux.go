package prefault

import (
	"bytes"
	"syscall"
	"unsafe"
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

// marker is initialised data, so it lies in the mapping to populate.
var marker = [1]byte{1}

// maps holds /proc/self/maps: read without allocating, as Nova's package
// initialisers must (TestPackageInitsAllocateLittle). A process has a
// few dozen mappings when this runs.
var maps [32 << 10]byte

func populateData() {
	fd, err := syscall.Open("/proc/self/maps", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	n := 0
	for n < len(maps) {
		m, err := syscall.Read(fd, maps[n:])
		if err != nil || m <= 0 {
			break
		}
		n += m
	}
	syscall.Close(fd)
	at := uint64(uintptr(unsafe.Pointer(&marker)))
	for rest := maps[:n]; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		// start-end perms offset dev inode [path]
		lo, line, ok1 := bytes.Cut(line, []byte("-"))
		hi, line, ok2 := bytes.Cut(line, []byte(" "))
		start, ok3 := parseHex(lo)
		end, ok4 := parseHex(hi)
		if !ok1 || !ok2 || !ok3 || !ok4 || at < start || at >= end {
			continue
		}
		if bytes.HasPrefix(line, []byte("rw-p ")) {
			syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), madvPopulateWrite)
		}
		return
	}
}

func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | uint64(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
