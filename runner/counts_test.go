package runner

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCount(t *testing.T) {
	pcrs := []PCR{
		{Result: PCRPass}, {Result: PCRFail, Severity: High},
		{Result: PCRFail, Severity: High}, {Result: PCRFail, Severity: Low},
		{Result: PCRSkipped}, {Result: PCRError},
	}
	want := Counts{Pass: 1, Fail: 3, Skipped: 1, Error: 1, Failed: map[Severity]int{High: 2, Low: 1}}
	if diff := cmp.Diff(want, CountPCRs(pcrs)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if got, want := want.String(), "1 pass, 3 fail (2 high, 1 low), 1 skipped, 1 error"; got != want {
		t.Errorf("Summarize = %q, want %q", got, want)
	}
}
