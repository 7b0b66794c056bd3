package chain

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/nova-platform/nova/runner"
)

// ContractsDir is the only top-level entry an evidence repo may hold.
const ContractsDir = "contracts"

// noContractDir holds the events of runs that failed before a contract id
// was known (a missing or unparsable contract): they are evidence too, and
// a name starting with "_" can never collide with a contract id.
const noContractDir = "_none"

var (
	// contractIDPattern keeps contract ids usable as one path segment.
	contractIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`) })
	// bucketPattern is a contract directory's subdirectory: <seq/100>xx.
	bucketPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(0|[1-9][0-9]{0,16})xx$`) })
	// messagePattern is the commit message: <type> <contractId> <env> seq=<n>.
	messagePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\S+) (\S+) (\S+) seq=([1-9][0-9]{0,18})\n?$`) })
)

// Dir is the directory name of a contract's events.
func Dir(contractID string) string {
	if contractID == "" {
		return noContractDir
	}
	return contractID
}

// CheckEventNames refuses events whose contract id or type cannot be part
// of a path: they would escape the layout or be unverifiable.
func CheckEventNames(e runner.Event) error {
	if e.ContractID != "" && !contractIDPattern().MatchString(e.ContractID) {
		return fmt.Errorf("contract id %q cannot name a directory", e.ContractID)
	}
	if !isEventType(e.Type) {
		return fmt.Errorf("event type %q is not nova.<word>.<word>", e.Type)
	}
	if e.ID == "" {
		return fmt.Errorf("event of type %s has no id", e.Type)
	}
	return nil
}

// EventPath is where an event lives in the evidence repo.
func EventPath(contractID string, seq int64, typ string) string {
	return eventPath(Dir(contractID), seq, typ)
}

func eventPath(dir string, seq int64, typ string) string {
	return contractPath(dir) + "/" + BucketName(seq) + "/" + EventFileName(seq, typ, "json")
}

// contractPath is a contract directory's path: contracts/<shard>/<dir>.
func contractPath(dir string) string { return ContractsDir + "/" + ShardOf(dir) + "/" + dir }

// ShardOf is the directory under contracts/ that holds contract directory
// dir: the first two hex digits of the SHA-256 of its name. Every commit
// rewrites the trees on its event's path, and with every contract listed
// in contracts/ itself that tree, and so each commit and each read of a
// chain, grew with the number of contracts in the repo; spread over 256
// shards, a repo of 10 000 contracts lists ~40 in each. A hash, not the
// name's first letters, because ids like svc-0001…svc-9999 share those.
func ShardOf(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:1])
}

// isShard reports whether name can be a shard directory's name.
func isShard(name string) bool {
	return len(name) == 2 && isLowerHex(name[0]) && isLowerHex(name[1])
}

func isLowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// SplitContractPath reads contracts/<shard>/<dir>/<rest>: the contract
// directory, and what follows it (empty for the directory itself).
func SplitContractPath(p string) (dir, rest string, ok bool) {
	after, ok := strings.CutPrefix(p, ContractsDir+"/")
	if !ok {
		return "", "", false
	}
	shard, after, ok := strings.Cut(after, "/")
	if !ok || !isShard(shard) {
		return "", "", false
	}
	dir, rest, _ = strings.Cut(after, "/")
	return dir, rest, ShardOf(dir) == shard
}

// EventsPerBucket is how many events of a contract share a directory.
// Every commit rewrites the trees on its event's path, so a contract's
// events in one flat directory made each commit cost (and add to the
// repo) in proportion to the contract's whole history; grouped by the
// hundred, a commit rewrites at most 200 files' entries and one more
// bucket entry per hundred events.
const EventsPerBucket = 100

// BucketName is the directory of a contract's events seq lies in: 0xx
// holds seq 1–99, 12xx seq 1200–1299.
func BucketName(seq int64) string {
	return strconv.FormatInt(seq/EventsPerBucket, 10) + "xx"
}

// IsBucket reports whether name can be a bucket directory's name.
func IsBucket(name string) bool { return bucketPattern().MatchString(name) }

func EventFileName(seq int64, typ, ext string) string {
	return strconv.FormatInt(seq, 10) + "-" + typ + "." + ext
}

// SigPath is the detached signature beside an event file.
func SigPath(jsonPath string) string { return strings.TrimSuffix(jsonPath, ".json") + ".sig" }

// eventName is what a file name inside the layout says about its event.
type eventName struct {
	Seq  int64
	Type string
	Sig  bool
}

// parseEventFileName parses <seq>-<type>.(json|sig), seq without leading
// zeros and at most 19 digits, type an event type (isEventType). It reads
// every name of a chain each time a chain is listed, 20 000 of them for a
// contract of 10 000 events, so it is written out rather than a regular
// expression, which cost ~2.5 µs a name: FuzzEventFileName holds it to
// the patterns it replaces.
func parseEventFileName(name string) (eventName, bool) {
	digits := 0
	for digits < len(name) && '0' <= name[digits] && name[digits] <= '9' {
		digits++
	}
	if digits == 0 || digits > 19 || name[0] == '0' || digits == len(name) || name[digits] != '-' {
		return eventName{}, false
	}
	rest := name[digits+1:]
	var n eventName
	switch {
	case strings.HasSuffix(rest, ".json"):
		n.Type = rest[:len(rest)-len(".json")]
	case strings.HasSuffix(rest, ".sig"):
		n.Type, n.Sig = rest[:len(rest)-len(".sig")], true
	default:
		return eventName{}, false
	}
	if !isEventType(n.Type) {
		return eventName{}, false
	}
	seq, err := strconv.ParseInt(name[:digits], 10, 64)
	if err != nil {
		return eventName{}, false
	}
	n.Seq = seq
	return n, true
}

// isEventType reports whether typ has the controlled vocabulary's shape,
// nova.<a>.<b>…: dot-separated words, at least two, each starting with a
// lowercase letter; the first of lowercase letters and digits, the others
// also with "_" and "-".
func isEventType(typ string) bool {
	words := 0
	for w := range strings.SplitSeq(typ, ".") {
		if w == "" || w[0] < 'a' || w[0] > 'z' {
			return false
		}
		for i := 1; i < len(w); i++ {
			c := w[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || words > 0 && (c == '_' || c == '-')) {
				return false
			}
		}
		words++
	}
	return words >= 2
}

// parseBucketedName parses <bucket>/<seq>-<type>.(json|sig), a file's
// name within its contract directory: the bucket must be the one its seq
// belongs in.
func parseBucketedName(name string) (eventName, bool) {
	bucket, file, ok := strings.Cut(name, "/")
	if !ok {
		return eventName{}, false
	}
	n, ok := parseEventFileName(file)
	if !ok || bucket != BucketName(n.Seq) {
		return eventName{}, false
	}
	return n, true
}

func isEventFileName(name string) bool {
	_, ok := parseEventFileName(name)
	return ok
}

// ValidDir reports whether name may be a directory under contracts/.
func ValidDir(name string) bool {
	return name == noContractDir || contractIDPattern().MatchString(name)
}

// CommitMessage is the one-line message of the commit that adds e; env is
// "-" when the event has none, so the message always has four fields.
func CommitMessage(e runner.Event) string {
	env := e.Environment
	if env == "" {
		env = "-"
	}
	return fmt.Sprintf("%s %s %s seq=%d\n", e.Type, Dir(e.ContractID), env, e.Seq)
}

// commitSubject is what a commit message says about its event.
type commitSubject struct {
	Type string
	Dir  string
	Env  string
	Seq  int64
}

func parseCommitMessage(msg string) (commitSubject, bool) {
	m := messagePattern().FindStringSubmatch(msg)
	if m == nil {
		return commitSubject{}, false
	}
	seq, err := strconv.ParseInt(m[4], 10, 64)
	if err != nil {
		return commitSubject{}, false
	}
	return commitSubject{Type: m[1], Dir: m[2], Env: m[3], Seq: seq}, true
}

// path is the event file the commit subject names.
func (s commitSubject) path() string { return eventPath(s.Dir, s.Seq, s.Type) }
