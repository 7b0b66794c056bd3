package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// A contract's chain is read in three steps, shared by the store (which
// needs the first problem, as an error, before it reads or extends a
// chain) and by Verify (which reports every problem): listChain sorts the
// directory's entries, checkFile reads each event file, linkChain walks
// the files in seq order. Each step records findings in the order the
// gate must meet them, so the store's error is verify's first finding.

// contractEntries returns the files of contracts/<dir> at commit head
// (contractFiles) and the directory's tree (none and zero when it does not
// exist). An entry of that name that is not a directory is a layout
// error: the gate must not read it as "no events".
func contractEntries(r *gitrepo.Reader, head plumbing.Hash, dir string) ([]gitrepo.Entry, plumbing.Hash, error) {
	h, err := contractTree(r, head, dir)
	if err != nil || h.IsZero() {
		return nil, h, err
	}
	entries, err := contractFiles(r, h)
	return entries, h, err
}

// contractFiles lists the contract directory tree dir as one directory:
// the entries of each bucket, named <bucket>/<file>. An entry that is not
// a bucket directory is listed as it is, for listChain to report.
func contractFiles(r *gitrepo.Reader, dir plumbing.Hash) ([]gitrepo.Entry, error) {
	buckets, err := r.Tree(dir)
	if err != nil {
		return nil, err
	}
	var out []gitrepo.Entry
	for _, b := range buckets {
		if !isBucket(b.Name) || b.Mode != filemode.Dir {
			out = append(out, b)
			continue
		}
		files, err := r.Tree(b.Hash)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			f.Name = b.Name + "/" + f.Name
			out = append(out, f)
		}
	}
	return out, nil
}

// contractTree is the hash of contracts/<shard>/<dir> at commit head
// (zero when it does not exist), found without reading the directory
// itself: a chain known at that tree is known whole, however long it is.
func contractTree(r *gitrepo.Reader, head plumbing.Hash, dir string) (plumbing.Hash, error) {
	if head.IsZero() {
		return plumbing.ZeroHash, nil
	}
	c, err := r.Commit(head)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h := c.TreeHash
	shard := shardOf(dir)
	// Found in the stored trees, not parsed ones: contracts/ lists up to
	// 256 shards, and only one entry of it is wanted.
	for i, name := range []string{contractsDir, shard, dir} {
		raw, err := r.RawTree(h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if i == 1 && !isShard(dir) {
			if _, _, _, old := gitrepo.FindRaw(raw, 0, dir); old {
				// Not reading the chain there would start it again at
				// seq 1 beside the old one.
				return plumbing.ZeroHash, runner.Errorf(runner.EvidenceLayoutInvalid, "%s/%s is a contract directory outside its shard %s/ (a layout older than this Nova; see docs/evidence.md)", contractsDir, dir, shard)
			}
		}
		e, _, _, ok := gitrepo.FindRaw(raw, 0, name)
		if !ok {
			return plumbing.ZeroHash, nil
		}
		if e.Mode != filemode.Dir {
			where := [...]string{contractsDir, contractsDir + "/" + shard, contractPath(dir)}[i]
			return plumbing.ZeroHash, runner.Errorf(runner.EvidenceLayoutInvalid, "%s is not a directory", where)
		}
		h = e.Hash
	}
	return h, nil
}

// eventFile is one <seq>-<type>.json of a contract directory with its
// signature and what reading them found.
type eventFile struct {
	dir      string // the directory under contracts/
	path     string
	seq      int64
	typ      string
	blob     plumbing.Hash
	sig      plumbing.Hash
	hasSig   bool
	sum      string // sha256 of the file: the next event's preveventhash
	event    runner.Event
	decoded  bool
	findings []Finding
}

// listChain returns a contract directory's event files (contractFiles) in
// seq order (name order among files claiming one seq), and a finding for
// every entry that has no place in the layout.
func listChain(dir string, entries []gitrepo.Entry) ([]*eventFile, []Finding) {
	prefix := contractPath(dir) + "/"
	files := map[string]plumbing.Hash{}
	for _, e := range entries {
		if e.Mode.IsFile() {
			files[e.Name] = e.Hash
		}
	}
	var events []*eventFile
	var findings []Finding
	for _, e := range entries {
		name, ok := parseBucketedName(e.Name)
		switch {
		case !ok && !strings.Contains(e.Name, "/") && e.Mode.IsFile() && isEventFileName(e.Name):
			// What Nova wrote before events were grouped by the hundred.
			findings = append(findings, Finding{Reason: runner.EvidenceLayoutInvalid, Path: prefix + e.Name, Message: "event file directly in the contract directory, not in a <seq/100>xx/ bucket (a layout older than this Nova)"})
		case !ok || !e.Mode.IsFile():
			findings = append(findings, Finding{Reason: runner.EvidenceLayoutInvalid, Path: prefix + e.Name, Message: "not <seq/100>xx/<seq>-<type>.json or .sig"})
		case name.Sig:
			if _, ok := files[strings.TrimSuffix(e.Name, ".sig")+".json"]; !ok {
				findings = append(findings, Finding{Reason: runner.EvidenceLayoutInvalid, Path: prefix + e.Name, Message: "signature without its event"})
			}
		default:
			f := &eventFile{dir: dir, path: prefix + e.Name, seq: name.Seq, typ: name.Type, blob: e.Hash}
			f.sig, f.hasSig = files[sigPath(e.Name)]
			events = append(events, f)
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].seq < events[j].seq })
	return events, findings
}

// fileCheck is what an event file's bytes and signature say wherever they
// lie. Blobs are immutable, so the store keeps it per (blob, signature)
// and checks a chain's older events only once.
type fileCheck struct {
	sum       string
	event     runner.Event
	sigErr    error
	decodeErr error
}

func checkFile(body, sig []byte, hasSig bool, keys *signing.KeySet) fileCheck {
	sum := sha256.Sum256(body)
	c := fileCheck{sum: hex.EncodeToString(sum[:])}
	if !hasSig {
		c.sigErr = errors.New("no .sig beside the event")
	} else {
		c.sigErr = keys.Verify(body, sig)
	}
	c.decodeErr = json.Unmarshal(body, &c.event)
	return c
}

// apply records what c says about f where it lies: a signature proves who
// wrote the bytes, not where they belong, so the event itself must say it
// is this directory's contract and of its file's type.
func (f *eventFile) apply(c fileCheck) {
	f.sum = c.sum
	add := func(reason runner.Reason, msg string) {
		f.findings = append(f.findings, Finding{Reason: reason, Path: f.path, Message: msg})
	}
	if c.sigErr != nil {
		add(runner.EvidenceSignatureInvalid, c.sigErr.Error())
	}
	if c.decodeErr != nil {
		add(runner.EvidenceLayoutInvalid, "not a JSON event: "+c.decodeErr.Error())
		return
	}
	f.event, f.decoded = c.event, true
	if f.event.Type != f.typ || contractDir(f.event.ContractID) != f.dir {
		add(runner.EvidenceLayoutInvalid, fmt.Sprintf("event is %s of contract %q, its path says %s of %s", f.event.Type, f.event.ContractID, f.typ, f.dir))
	}
	if f.event.ID == "" {
		add(runner.EvidenceLayoutInvalid, "event has no id")
	}
}

// linkChain walks checked files in seq order: seq continuous from 1, one
// file per seq, each event's seq its file's, each preveventhash the sha256
// of the previous event file. It returns the decoded events and every
// finding, the files' own included, in the order the walk meets them.
func linkChain(dir string, files []*eventFile) ([]runner.Event, []Finding) {
	return linkChainFrom(dir, files, chainTail{})
}

// chainTail is where a chain stood before the files linkChainFrom walks:
// its last seq and the sha256 of its last event file (zero: no events).
type chainTail struct {
	seq int64
	sum string
}

// linkChainFrom is linkChain for the files that continue a chain from
// tail: the first must be seq tail.seq+1 linking to tail.sum, and none may
// claim a seq the chain had already.
func linkChainFrom(dir string, files []*eventFile, tail chainTail) ([]runner.Event, []Finding) {
	var events []runner.Event
	var findings []Finding
	var prev *eventFile
	if tail.seq > 0 {
		prev = &eventFile{seq: tail.seq, sum: tail.sum}
	}
	want := tail.seq + 1
	for i := 0; i < len(files); {
		f := files[i]
		if tail.seq > 0 && f.seq <= tail.seq {
			findings = append(findings, Finding{Reason: runner.EvidenceChainBroken, Path: f.path, Message: fmt.Sprintf("seq %d was taken before this file was added", f.seq)})
			findings = append(findings, f.findings...)
			i++
			continue
		}
		for ; want < f.seq; want++ {
			findings = append(findings, Finding{Reason: runner.EvidenceChainBroken, Path: contractPath(dir), Message: fmt.Sprintf("seq %d is missing", want)})
			prev = nil
		}
		j := i + 1
		for ; j < len(files) && files[j].seq == f.seq; j++ {
			findings = append(findings, Finding{Reason: runner.EvidenceChainBroken, Path: files[j].path, Message: fmt.Sprintf("two events claim seq %d (also %s)", f.seq, f.path)})
			findings = append(findings, files[j].findings...)
		}
		findings = append(findings, f.findings...)
		if f.decoded {
			if f.event.Seq != f.seq {
				findings = append(findings, Finding{Reason: runner.EvidenceChainBroken, Path: f.path, Message: fmt.Sprintf("event says seq %d, its file is seq %d", f.event.Seq, f.seq)})
			}
			link := ""
			if prev != nil {
				link = prev.sum
			}
			// Across a gap the link is not checked: the gap is reported.
			if (f.seq == tail.seq+1 || prev != nil) && f.event.PrevEventHash != link {
				findings = append(findings, Finding{Reason: runner.EvidenceChainBroken, Path: f.path, Message: fmt.Sprintf("preveventhash %s does not match the previous event file (%s)", shortSum(f.event.PrevEventHash), shortSum(link))})
			}
			events = append(events, f.event)
		}
		prev, want, i = f, f.seq+1, j
	}
	return events, findings
}

// chainError is the store's answer to a chain with findings: the first,
// with its reason code — never the part of the chain that could be read,
// which would let someone who can push but not sign hide an event the gate
// must see.
func chainError(findings []Finding) error {
	f := findings[0]
	return runner.Errorf(f.Reason, "%s: %s", f.Path, f.Message)
}

func shortSum(s string) string {
	if s == "" {
		return `""`
	}
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
