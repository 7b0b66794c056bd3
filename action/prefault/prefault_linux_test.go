package prefault

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// coldData is initialised data (so it lies in the executable's writable
// mapping, not in the zeroed data after it) that nothing but the test's
// last line reads: without the advice, almost all of its pages would not
// be resident when the test looks.
var coldData = [1 << 20]byte{1}

// TestDataSegmentIsResident reads /proc/self/smaps of this test binary,
// whose init ran populateData: the executable's writable mapping must be
// resident whole.
func TestDataSegmentIsResident(t *testing.T) {
	defer func() { t.Logf("last byte of coldData: %d", coldData[len(coldData)-1]) }()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var in bool
	var size, rss int
	found := false
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-"): // a mapping's first line
			in = len(fields) == 6 && fields[1] == "rw-p" && fields[5] == exe
			found = found || in
		case in && len(fields) == 3 && fields[0] == "Size:":
			size, _ = strconv.Atoi(fields[1])
		case in && len(fields) == 3 && fields[0] == "Rss:":
			rss, _ = strconv.Atoi(fields[1])
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if !found || size == 0 {
		t.Fatalf("no writable mapping of %s in /proc/self/smaps", exe)
	}
	if rss != size || size < len(coldData)>>10 {
		t.Fatalf("data segment: %d kB resident of %d kB", rss, size)
	}
}
