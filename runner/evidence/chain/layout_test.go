package chain

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// TestCommitMessagesAndPaths pins the layout auditors and forges see: the
// commit message and file path of representative events.
func TestCommitMessagesAndPaths(t *testing.T) {
	events := []runner.Event{
		{Type: runner.EventPlanCreated, ContractID: "0c0ffee0-1111-4222-8333-444455556666", Environment: "qa", Seq: 3},
		{Type: runner.EventApplyAuthorized, ContractID: "0c0ffee0-1111-4222-8333-444455556666", Environment: "prod", Seq: 12},
		{Type: runner.EventApplyIndeterminate, ContractID: "0c0ffee0-1111-4222-8333-444455556666", Environment: "dev", Seq: 1},
		{Type: runner.EventRunFailed, ContractID: "", Environment: "", Seq: 7},
		// The first and the last seq of a bucket, and a later one.
		{Type: runner.EventPlanCreated, ContractID: "c-1", Environment: "dev", Seq: 99},
		{Type: runner.EventPlanCreated, ContractID: "c-1", Environment: "dev", Seq: 100},
		{Type: runner.EventPlanCreated, ContractID: "c-1", Environment: "dev", Seq: 1234},
	}
	var b strings.Builder
	for _, e := range events {
		p := EventPath(e.ContractID, e.Seq, e.Type)
		b.WriteString(p + "\n" + SigPath(p) + "\n" + CommitMessage(e) + "\n")
		subj, ok := parseCommitMessage(CommitMessage(e))
		if !ok || subj.path() != p {
			t.Errorf("message %q parses to %+v (ok=%v), want path %s", CommitMessage(e), subj, ok, p)
		}
	}
	golden := filepath.Join("testdata", "commit-messages", "want.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v; regenerate with: go test ./runner/evidence/chain -run TestCommitMessagesAndPaths -update", err)
	}
	if string(want) != b.String() {
		t.Errorf("commit messages or paths changed:\n%s\nwant:\n%s\nregenerate with: go test ./runner/evidence/chain -run TestCommitMessagesAndPaths -update", b.String(), want)
	}
}

func TestParseEventFileName(t *testing.T) {
	for name, ok := range map[string]bool{
		"1-nova.plan.created.json":  true,
		"12-nova.plan.created.sig":  true,
		"0-nova.plan.created.json":  false,
		"01-nova.plan.created.json": false,
		"1-nova.plan.created.txt":   false,
		"1-Nova.plan.json":          false,
		"x-nova.plan.created.json":  false,
		"1-nova.json":               false,
	} {
		if _, got := parseEventFileName(name); got != ok {
			t.Errorf("parseEventFileName(%q) ok = %v, want %v", name, got, ok)
		}
	}
}

func TestParseBucketedName(t *testing.T) {
	for name, ok := range map[string]bool{
		"0xx/1-nova.plan.created.json":     true,
		"0xx/99-nova.plan.created.sig":     true,
		"1xx/100-nova.plan.created.json":   true,
		"12xx/1234-nova.plan.created.json": true,
		"1xx/99-nova.plan.created.json":    false, // seq 99 belongs in 0xx
		"0xx/100-nova.plan.created.json":   false,
		"00xx/1-nova.plan.created.json":    false,
		"1-nova.plan.created.json":         false, // the flat layout
		"0xx/notes.txt":                    false,
		"0xx/0xx/1-nova.plan.created.json": false,
	} {
		if _, got := parseBucketedName(name); got != ok {
			t.Errorf("parseBucketedName(%q) ok = %v, want %v", name, got, ok)
		}
	}
}

func TestSplitContractPath(t *testing.T) {
	for _, tt := range []struct {
		path, dir, rest string
		ok              bool
	}{
		{"contracts/87/c-a/0xx/2-nova.test.step.json", "c-a", "0xx/2-nova.test.step.json", true},
		{"contracts/87/c-a", "c-a", "", true},
		{"contracts/a6/_none/0xx/1-nova.run.failed.sig", "_none", "0xx/1-nova.run.failed.sig", true},
		{"contracts/7b/c-a/0xx/2-nova.test.step.json", "c-a", "0xx/2-nova.test.step.json", false}, // c-a's shard is 87
		{"contracts/c-a/0xx/2-nova.test.step.json", "", "", false},                                // before shards
		{"contracts/8/c-a", "", "", false},
		{"contracts/8A/c-a", "", "", false},
		{"other/87/c-a", "", "", false},
	} {
		dir, rest, ok := SplitContractPath(tt.path)
		if ok != tt.ok || ok && (dir != tt.dir || rest != tt.rest) {
			t.Errorf("splitContractPath(%q) = %q, %q, %v; want %q, %q, %v", tt.path, dir, rest, ok, tt.dir, tt.rest, tt.ok)
		}
	}
}

// The patterns parseEventFileName and isEventType were written from: a
// file name, and the controlled vocabulary's shape of an event type.
var (
	fileNameRef  = regexp.MustCompile(`^([1-9][0-9]{0,18})-([a-z][a-z0-9._-]*)\.(json|sig)$`)
	eventTypeRef = regexp.MustCompile(`^[a-z][a-z0-9]*(\.[a-z][a-z0-9_-]*)+$`)
)

// FuzzEventFileName holds parseEventFileName and isEventType to the
// patterns they replace: the same names accepted, read the same way. An
// evidence repo is written by whoever can push to it, so every name is
// input. It runs on every test run (Makefile), its seeds with go test.
func FuzzEventFileName(f *testing.F) {
	for _, name := range []string{
		"1-nova.plan.created.json", "12-nova.plan.created.sig", "1234-nova.apply.completed.json",
		"0-nova.plan.created.json", "01-nova.plan.created.json", "-nova.plan.json", "1-", "", "1",
		"1-nova.json", "1-Nova.plan.json", "1-nova..plan.json", "1-nova.plan..json", "1-.nova.plan.json",
		"1-nova.x_y-z.json", "1-nova_x.y.json", "1-nova-x.y.json", "1-nova.x.json.sig", "1-nova.x.sig.json",
		"1-nova.x.JSON", "1-nova.x.jso", "1-nova.x.json\n", "1-nova.x.", "1-nova.9x.json", "1-9ova.x.json",
		"9223372036854775807-nova.x.json", "9999999999999999999-nova.x.json", "12345678901234567890-nova.x.json",
		"1-nova.plan.créé.json", "1xx/1-nova.plan.json",
	} {
		f.Add(name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		var want eventName
		m := fileNameRef.FindStringSubmatch(name)
		wantOK := m != nil && eventTypeRef.MatchString(m[2])
		if wantOK {
			seq, err := strconv.ParseInt(m[1], 10, 64)
			want, wantOK = eventName{Seq: seq, Type: m[2], Sig: m[3] == "sig"}, err == nil
		}
		if got, ok := parseEventFileName(name); ok != wantOK || ok && got != want {
			t.Errorf("parseEventFileName(%q) = %+v, %v; the pattern reads %+v, %v", name, got, ok, want, wantOK)
		}
		if got, want := isEventType(name), eventTypeRef.MatchString(name); got != want {
			t.Errorf("isEventType(%q) = %v, the pattern says %v", name, got, want)
		}
	})
}
