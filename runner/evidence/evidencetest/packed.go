// Package evidencetest builds evidence repos for benchmarks and tests that
// need more events than Nova could record in the time a test has: the same
// layout, event signatures and signed commits the store writes (so the
// repo verifies), written straight into one git pack whose trees are
// deltas of their previous versions, as git would pack them.
package evidencetest

import (
	"bufio"
	"compress/zlib"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// maxDepth bounds a tree's delta chain, as git's own packing does: reading
// the newest version of a tree applies at most this many deltas.
const maxDepth = 50

// Build writes events, one signed commit each, into a new bare repo at
// path: each contract's events in the order given (seq and preveventhash
// are set here), on branch main. It needs git on PATH to index the pack.
func Build(path string, keys signing.Keys, events []runner.Event) (head string, err error) {
	branch := plumbing.NewBranchReferenceName(chain.DefaultBranch)
	if err := gitrepo.InitBare(path, branch); err != nil {
		return "", err
	}
	files, err := sealEvents(keys, events)
	if err != nil {
		return "", err
	}
	tmp := filepath.Join(path, "objects", "pack", "tmp-build.pack")
	f, err := os.Create(tmp)
	if err != nil {
		return "", err
	}
	w := &packWriter{file: f, sha: sha1.New()}
	w.out = bufio.NewWriterSize(io.MultiWriter(f, w.sha), 1<<20)
	w.start(8 * len(events))
	b := &builder{w: w, keys: keys, shards: map[string]*treeState{}, contracts: map[string]*treeState{}, buckets: map[string]*treeState{}}
	var commit plumbing.Hash
	for i, e := range events {
		if commit, err = b.addEvent(e, files[i], commit); err != nil {
			f.Close()
			return "", err
		}
	}
	sum, err := w.finish()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	pack := filepath.Join(path, "objects", "pack", "pack-"+sum+".pack")
	if err := os.Rename(tmp, pack); err != nil {
		return "", err
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return "", fmt.Errorf("git is not on PATH: run `make tools`")
	}
	if out, err := exec.Command(gitBin, "index-pack", pack).CombinedOutput(); err != nil {
		return "", fmt.Errorf("git index-pack: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(path, branch.String()), []byte(commit.String()+"\n"), 0o644); err != nil {
		return "", err
	}
	return commit.String(), nil
}

// sealed is one event file and its signature.
type sealed struct {
	json, sig                []byte
	shard, dir, bucket, name string
	event                    runner.Event
}

// sealEvents chains each contract's events and signs them, the signing
// spread over every core.
func sealEvents(keys signing.Keys, events []runner.Event) ([]sealed, error) {
	out := make([]sealed, len(events))
	heads := map[string]struct {
		seq  int64
		hash string
	}{}
	for i, e := range events {
		h := heads[e.ContractID]
		e.Seq, e.PrevEventHash = h.seq+1, h.hash
		canon, err := e.Canonical()
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(canon)
		heads[e.ContractID] = struct {
			seq  int64
			hash string
		}{e.Seq, hex.EncodeToString(sum[:])}
		p := chain.EventPath(e.ContractID, e.Seq, e.Type)
		bucket := filepath.Dir(p)
		dir := filepath.Dir(bucket)
		out[i] = sealed{json: canon, shard: filepath.Base(filepath.Dir(dir)), dir: filepath.Base(dir), bucket: filepath.Base(bucket), name: filepath.Base(p), event: e}
	}
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(out); i += workers {
				if out[i].sig, errs[w] = keys.Events.Sign(out[i].json); errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// treeState is the newest version of one tree in the pack.
type treeState struct {
	entries []gitrepo.Entry
	enc     []byte
	id      plumbing.Hash
	offset  int64 // where it is in the pack
	depth   int   // its delta chain's length
}

type builder struct {
	w         *packWriter
	keys      signing.Keys
	shards    map[string]*treeState // each shard of contracts/
	contracts map[string]*treeState // each contract's directory
	buckets   map[string]*treeState // by <contract dir>/<bucket>
	root      treeState             // contracts/
}

// addEvent writes what the store's one commit per event writes: the event
// and its signature, its bucket, the contract's directory, its shard,
// contracts/, the root tree and the signed commit on top of parent.
func (b *builder) addEvent(e runner.Event, s sealed, parent plumbing.Hash) (plumbing.Hash, error) {
	jsonID := b.w.full(plumbing.BlobObject, s.json)
	sigID := b.w.full(plumbing.BlobObject, s.sig)
	tree := func(m map[string]*treeState, key string) *treeState {
		if m[key] == nil {
			m[key] = &treeState{}
		}
		return m[key]
	}
	bucket, dir, shard := tree(b.buckets, s.dir+"/"+s.bucket), tree(b.contracts, s.dir), tree(b.shards, s.shard)
	sigName := s.name[:len(s.name)-len(".json")] + ".sig"
	b.w.insert(bucket, gitrepo.Entry{Name: s.name, Mode: filemode.Regular, Hash: jsonID}, gitrepo.Entry{Name: sigName, Mode: filemode.Regular, Hash: sigID})
	b.w.upsert(dir, gitrepo.Entry{Name: s.bucket, Mode: filemode.Dir, Hash: bucket.id})
	b.w.upsert(shard, gitrepo.Entry{Name: s.dir, Mode: filemode.Dir, Hash: dir.id})
	b.w.upsert(&b.root, gitrepo.Entry{Name: s.shard, Mode: filemode.Dir, Hash: shard.id})
	rootID := b.w.full(plumbing.TreeObject, gitrepo.EncodeTree([]gitrepo.Entry{{Name: "contracts", Mode: filemode.Dir, Hash: b.root.id}}))
	who := b.keys.Commit.Identity(e.Time)
	c := &object.Commit{Author: who, Committer: who, Message: chain.CommitMessage(s.event), TreeHash: rootID}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	if err := b.keys.Commit.SignCommit(c); err != nil {
		return plumbing.ZeroHash, err
	}
	obj := &plumbing.MemoryObject{}
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	r, err := obj.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return b.w.full(plumbing.CommitObject, data), b.w.err
}

// packWriter writes a version 2 pack file.
type packWriter struct {
	file *os.File
	out  *bufio.Writer
	sha  hash.Hash
	pos  int64
	err  error
	z    *zlib.Writer
}

func (w *packWriter) write(b []byte) {
	if w.err == nil {
		_, w.err = w.out.Write(b)
		w.pos += int64(len(b))
	}
}

func (w *packWriter) start(objects int) {
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(objects))
	w.write(hdr[:])
}

func (w *packWriter) finish() (string, error) {
	if w.err == nil {
		w.err = w.out.Flush()
	}
	if w.err != nil {
		return "", w.err
	}
	sum := w.sha.Sum(nil)
	if _, err := w.file.Write(sum); err != nil {
		return "", err
	}
	return hex.EncodeToString(sum), nil
}

// header writes an object entry's type and size.
func (w *packWriter) header(typ int, size int) {
	b := []byte{byte(typ<<4) | byte(size&0x0f)}
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
		size >>= 7
	}
	w.write(b)
}

func (w *packWriter) deflate(data []byte) {
	if w.z == nil {
		w.z, _ = zlib.NewWriterLevel(writerFunc(w.write), zlib.BestSpeed)
	} else {
		w.z.Reset(writerFunc(w.write))
	}
	if _, err := w.z.Write(data); err != nil && w.err == nil {
		w.err = err
	}
	if err := w.z.Close(); err != nil && w.err == nil {
		w.err = err
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(b []byte) (int, error) { f(b); return len(b), nil }

// full writes a whole object and returns its id.
func (w *packWriter) full(t plumbing.ObjectType, data []byte) plumbing.Hash {
	w.header(int(t), len(data))
	w.deflate(data)
	return objectID(t, data)
}

// store writes tree data as the next version of ts: a delta of the
// previous version while its chain is short, whole otherwise.
func (w *packWriter) store(ts *treeState, data []byte) {
	offset := w.pos
	if ts.offset == 0 || ts.depth >= maxDepth {
		w.full(plumbing.TreeObject, data)
		ts.depth = 0
	} else {
		d := gitrepo.EncodeDelta(ts.enc, data)
		w.header(int(plumbing.OFSDeltaObject), len(d))
		w.write(gitrepo.AppendOfsDelta(nil, uint64(offset-ts.offset)))
		w.deflate(d)
		ts.depth++
	}
	ts.enc, ts.offset, ts.id = data, offset, objectID(plumbing.TreeObject, data)
}

// insert adds entries (adjacent in git's order) to a tree.
func (w *packWriter) insert(ts *treeState, entries ...gitrepo.Entry) {
	i, _ := slices.BinarySearchFunc(ts.entries, entries[0], gitrepo.CompareEntries)
	at := encodedLen(ts.entries[:i])
	ins := gitrepo.EncodeTree(entries)
	ts.entries = slices.Insert(ts.entries, i, entries...)
	data := slices.Concat(ts.enc[:at], ins, ts.enc[at:])
	w.store(ts, data)
}

// upsert sets one entry of a tree, replacing its hash when it exists.
func (w *packWriter) upsert(ts *treeState, e gitrepo.Entry) {
	i, found := slices.BinarySearchFunc(ts.entries, e, gitrepo.CompareEntries)
	if !found {
		w.insert(ts, e)
		return
	}
	ts.entries[i] = e
	at := encodedLen(ts.entries[:i]) + len(modeString(e.Mode)) + 1 + len(e.Name) + 1
	data := slices.Clone(ts.enc)
	copy(data[at:], e.Hash[:])
	w.store(ts, data)
}

func encodedLen(entries []gitrepo.Entry) int {
	n := 0
	for _, e := range entries {
		n += len(modeString(e.Mode)) + 1 + len(e.Name) + 1 + 20
	}
	return n
}

func modeString(m filemode.FileMode) string { return strconv.FormatUint(uint64(m), 8) }

func objectID(t plumbing.ObjectType, data []byte) plumbing.Hash {
	h := sha1.New()
	fmt.Fprintf(h, "%s %d\x00", t, len(data))
	h.Write(data)
	var id plumbing.Hash
	copy(id[:], h.Sum(nil))
	return id
}
