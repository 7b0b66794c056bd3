package chain

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

// ContractEntries returns the files of contracts/<dir> at commit head
// (contractFiles) and the directory's tree (none and zero when it does not
// exist). An entry of that name that is not a directory is a layout
// error: the gate must not read it as "no events".
func ContractEntries(r *gitrepo.Reader, head plumbing.Hash, dir string) ([]gitrepo.Entry, plumbing.Hash, error) {
	h, err := ContractTree(r, head, dir)
	if err != nil || h.IsZero() {
		return nil, h, err
	}
	entries, err := ContractFiles(r, h)
	return entries, h, err
}

// ContractFiles lists the contract directory tree dir as one directory:
// the entries of each bucket, named <bucket>/<file>. An entry that is not
// a bucket directory is listed as it is, for listChain to report.
func ContractFiles(r *gitrepo.Reader, dir plumbing.Hash) ([]gitrepo.Entry, error) {
	buckets, err := r.Tree(dir)
	if err != nil {
		return nil, err
	}
	var out []gitrepo.Entry
	for _, b := range buckets {
		if !IsBucket(b.Name) || b.Mode != filemode.Dir {
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

// ContractTree is the hash of contracts/<shard>/<dir> at commit head
// (zero when it does not exist), found without reading the directory
// itself: a chain known at that tree is known whole, however long it is.
func ContractTree(r *gitrepo.Reader, head plumbing.Hash, dir string) (plumbing.Hash, error) {
	if head.IsZero() {
		return plumbing.ZeroHash, nil
	}
	c, err := r.Commit(head)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h := c.TreeHash
	shard := ShardOf(dir)
	// Found in the stored trees, not parsed ones: contracts/ lists up to
	// 256 shards, and only one entry of it is wanted.
	for i, name := range []string{ContractsDir, shard, dir} {
		raw, err := r.RawTree(h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if i == 1 && !isShard(dir) {
			if _, _, _, old := gitrepo.FindRaw(raw, 0, dir); old {
				// Not reading the chain there would start it again at
				// seq 1 beside the old one.
				return plumbing.ZeroHash, runner.Errorf(runner.EvidenceLayoutInvalid, "%s/%s is a contract directory outside its shard %s/ (a layout older than this Nova; see docs/evidence.md)", ContractsDir, dir, shard)
			}
		}
		e, _, _, ok := gitrepo.FindRaw(raw, 0, name)
		if !ok {
			return plumbing.ZeroHash, nil
		}
		if e.Mode != filemode.Dir {
			where := [...]string{ContractsDir, ContractsDir + "/" + shard, contractPath(dir)}[i]
			return plumbing.ZeroHash, runner.Errorf(runner.EvidenceLayoutInvalid, "%s is not a directory", where)
		}
		h = e.Hash
	}
	return h, nil
}

// File is one <seq>-<type>.json of a contract directory with its
// signature and what reading them found.
type File struct {
	Dir      string // the directory under contracts/
	Path     string
	Seq      int64
	Type     string
	Blob     plumbing.Hash
	Sig      plumbing.Hash
	HasSig   bool
	Sum      string // sha256 of the file: the next event's preveventhash
	Event    runner.Event
	Decoded  bool
	Findings []Finding
	// Signed is which kind of signature the .sig is, and whose when it
	// is keyless and verified.
	Signed signing.Signed
}

// ListChain returns a contract directory's event files (contractFiles) in
// seq order (name order among files claiming one seq), and a finding for
// every entry that has no place in the layout.
func ListChain(dir string, entries []gitrepo.Entry) ([]*File, []Finding) {
	prefix := contractPath(dir) + "/"
	files := map[string]plumbing.Hash{}
	for _, e := range entries {
		if e.Mode.IsFile() {
			files[e.Name] = e.Hash
		}
	}
	var events []*File
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
			f := &File{Dir: dir, Path: prefix + e.Name, Seq: name.Seq, Type: name.Type, Blob: e.Hash}
			f.Sig, f.HasSig = files[SigPath(e.Name)]
			events = append(events, f)
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].Seq < events[j].Seq })
	return events, findings
}

// Check is what an event file's bytes and signature say wherever they
// lie. Blobs are immutable, so the store keeps it per (blob, signature)
// and checks a chain's older events only once.
type Check struct {
	Sum       string
	Event     runner.Event
	SigErr    error
	DecodeErr error
	Signed    signing.Signed
}

func CheckFile(body, sig []byte, hasSig bool, keys *signing.KeySet) Check {
	sum := sha256.Sum256(body)
	c := Check{Sum: hex.EncodeToString(sum[:])}
	if !hasSig {
		c.SigErr = errors.New("no .sig beside the event")
	} else {
		c.Signed, c.SigErr = keys.VerifySigner(body, sig)
	}
	c.DecodeErr = json.Unmarshal(body, &c.Event)
	return c
}

// Apply records what c says about f where it lies: a signature proves who
// wrote the bytes, not where they belong, so the event itself must say it
// is this directory's contract and of its file's type.
func (f *File) Apply(c Check) {
	f.Sum, f.Signed = c.Sum, c.Signed
	add := func(reason runner.Reason, msg string) {
		f.Findings = append(f.Findings, Finding{Reason: reason, Path: f.Path, Message: msg})
	}
	if c.SigErr != nil {
		// A keyless signature by an identity signers.yml does not name,
		// or whose log entry does not verify, says so; anything else
		// about a signature is invalid.
		reason := runner.EvidenceSignatureInvalid
		if r := runner.ReasonOf(c.SigErr); r == runner.SignerIdentityUntrusted || r == runner.RekorEntryInvalid {
			reason = r
		}
		add(reason, c.SigErr.Error())
	}
	if c.DecodeErr != nil {
		add(runner.EvidenceLayoutInvalid, "not a JSON event: "+c.DecodeErr.Error())
		return
	}
	f.Event, f.Decoded = c.Event, true
	if f.Event.Type != f.Type || Dir(f.Event.ContractID) != f.Dir {
		add(runner.EvidenceLayoutInvalid, fmt.Sprintf("event is %s of contract %q, its path says %s of %s", f.Event.Type, f.Event.ContractID, f.Type, f.Dir))
	}
	if f.Event.ID == "" {
		add(runner.EvidenceLayoutInvalid, "event has no id")
	}
}

// LinkChain walks checked files in seq order: seq continuous from 1, one
// file per seq, each event's seq its file's, each preveventhash the sha256
// of the previous event file. It returns the decoded events and every
// finding, the files' own included, in the order the walk meets them.
func LinkChain(dir string, files []*File) ([]runner.Event, []Finding) {
	return LinkChainFrom(dir, files, Tail{})
}

// Tail is where a chain stood before the files linkChainFrom walks:
// its last seq and the sha256 of its last event file (zero: no events).
type Tail struct {
	Seq int64
	Sum string
}

// LinkChainFrom is linkChain for the files that continue a chain from
// tail: the first must be seq tail.seq+1 linking to tail.sum, and none may
// claim a seq the chain had already.
func LinkChainFrom(dir string, files []*File, tail Tail) ([]runner.Event, []Finding) {
	var events []runner.Event
	var findings []Finding
	var prev *File
	if tail.Seq > 0 {
		prev = &File{Seq: tail.Seq, Sum: tail.Sum}
	}
	want := tail.Seq + 1
	for i := 0; i < len(files); {
		f := files[i]
		if tail.Seq > 0 && f.Seq <= tail.Seq {
			findings = append(findings, Finding{Reason: runner.EvidenceChainBroken, Path: f.Path, Message: fmt.Sprintf("seq %d was taken before this file was added", f.Seq)})
			findings = append(findings, f.Findings...)
			i++
			continue
		}
		for ; want < f.Seq; want++ {
			findings = append(findings, Finding{Reason: runner.EvidenceChainBroken, Path: contractPath(dir), Message: fmt.Sprintf("seq %d is missing", want)})
			prev = nil
		}
		j := i + 1
		for ; j < len(files) && files[j].Seq == f.Seq; j++ {
			findings = append(findings, Finding{Reason: runner.EvidenceChainBroken, Path: files[j].Path, Message: fmt.Sprintf("two events claim seq %d (also %s)", f.Seq, f.Path)})
			findings = append(findings, files[j].Findings...)
		}
		findings = append(findings, f.Findings...)
		if f.Decoded {
			if f.Event.Seq != f.Seq {
				findings = append(findings, Finding{Reason: runner.EvidenceChainBroken, Path: f.Path, Message: fmt.Sprintf("event says seq %d, its file is seq %d", f.Event.Seq, f.Seq)})
			}
			link := ""
			if prev != nil {
				link = prev.Sum
			}
			// Across a gap the link is not checked: the gap is reported.
			if (f.Seq == tail.Seq+1 || prev != nil) && f.Event.PrevEventHash != link {
				findings = append(findings, Finding{Reason: runner.EvidenceChainBroken, Path: f.Path, Message: fmt.Sprintf("preveventhash %s does not match the previous event file (%s)", shortSum(f.Event.PrevEventHash), shortSum(link))})
			}
			events = append(events, f.Event)
		}
		prev, want, i = f, f.Seq+1, j
	}
	return events, findings
}

// ChainError is the store's answer to a chain with findings: the first,
// with its reason code — never the part of the chain that could be read,
// which would let someone who can push but not sign hide an event the gate
// must see.
func ChainError(findings []Finding) error {
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
