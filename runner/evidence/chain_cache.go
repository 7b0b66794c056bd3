package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
)

// The chain cache is what the store verified of each contract's chain,
// kept in the state dir so the next process does not verify it again: a
// gate that read and checked every past event of the contract on its
// first question cost more with every run (4.7 s at 10 000 events).
//
// It is keyed by the contract directory's tree, which names every blob in
// it: a chain verified at that tree is the chain at any head with that
// tree. When the directory grew, the cached files' checks are reused and
// only the new files are read and verified, with the same chain reader.
// The head itself is always fetched and checked (sync) before the cache
// is consulted, so the cache never stands in for the signed history; it
// only spares re-reading files whose bytes the tree pins. It is trusted
// as the witness and the outbox are, as this machine's own state; a file
// that is torn, altered, of another version or written under other event
// keys is a miss, and the chain is read from the repo.

const (
	chainCacheDir   = "chains"
	chainCacheMagic = "nova-chain-cache 1\n"
)

// storedChain is one contract's verified chain as the cache file holds it.
type storedChain struct {
	Keys  string // the event keys' fingerprint it was verified with
	Dir   string
	Tree  plumbing.Hash
	Files []storedFile
}

type storedFile struct {
	Path      string
	Seq       int64
	Type      string
	Blob, Sig plumbing.Hash
	HasSig    bool
	Sum       string
	Event     runner.Event
}

func (s *Store) chainCachePath(dir string) string {
	// Hashed: a contract id need not be a safe file name.
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(s.cfg.StateDir, chainCacheDir, hex.EncodeToString(sum[:16]))
}

// loadChain returns the cached chain of contract directory dir, or an
// empty state when there is none that can be used. The caller holds s.mu.
func (s *Store) loadChain(dir string) *chainState {
	c, err := readChainCache(s.chainCachePath(dir), dir, s.eventKeys.Fingerprint())
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.logf("evidence: %v; reading the chain of %s from the repo", err, dir)
		}
		return &chainState{ids: map[string]bool{}, checks: map[[2]plumbing.Hash]chain.Check{}}
	}
	return c
}

func readChainCache(path, dir, keys string) (*chainState, error) {
	var sc storedChain
	if err := readSealed(path, chainCacheMagic, &sc); err != nil {
		return nil, err
	}
	if sc.Keys != keys || sc.Dir != dir {
		return nil, fmt.Errorf("chain cache %s: written for other keys or another contract", path)
	}
	c := &chainState{tree: sc.Tree, filesTree: sc.Tree, stored: true,
		events: make([]runner.Event, 0, len(sc.Files)), ids: make(map[string]bool, len(sc.Files)),
		checks: make(map[[2]plumbing.Hash]chain.Check, len(sc.Files)), files: make([]*chain.File, 0, len(sc.Files))}
	for _, f := range sc.Files {
		c.events = append(c.events, f.Event)
		c.ids[f.Event.ID] = true
		c.checks[[2]plumbing.Hash{f.Blob, f.Sig}] = chain.Check{Sum: f.Sum, Event: f.Event}
		c.files = append(c.files, &chain.File{Dir: dir, Path: f.Path, Seq: f.Seq, Type: f.Type, Blob: f.Blob, Sig: f.Sig, HasSig: f.HasSig, Sum: f.Sum, Event: f.Event, Decoded: true})
		c.hash = f.Sum
	}
	return c, nil
}

// saveChains writes the chains verified or extended since they were loaded. A chain
// that cannot be stored is only a cache miss for the next process. The
// caller holds s.mu.
//
// What to write is settled here, reading the repo as need be; the files,
// independent of each other (each written whole under its own name),
// are then written on every core: after a command that ran many
// contracts, three small files each were most of what closing cost.
func (s *Store) saveChains() {
	type save struct {
		dir      string
		c        *chainState
		chain    bool      // the chain cache is to write
		gate     *gateHead // the gate summary to write, nil when stored
		hashes   []uint64
		written  gateWrite
		chainErr error
	}
	var saves []*save
	for dir, c := range s.chains {
		if c.tree != c.filesTree && !c.tree.IsZero() {
			// Deliveries carried the chain forward: read the files they
			// added (this store's own events, whose checks it knows) so
			// the next process starts from the head.
			fresh, err := s.readChain(dir, c.tree, c)
			if err != nil {
				s.logf("evidence: %v; not storing the chain of %s", err, dir)
				continue
			}
			c, s.chains[dir] = fresh, fresh
		}
		if c.filesTree.IsZero() {
			continue
		}
		sv := &save{dir: dir, c: c, chain: !c.stored}
		if g := s.loadGateHead(dir); g == nil || g.tree != c.filesTree || g.unsaved {
			g := c.gateHead()
			sv.gate = &gateHead{tree: c.filesTree, seq: g.seq, hash: g.hash, summary: g.summary}
			sv.hashes = make([]uint64, 0, len(c.events))
			for _, e := range c.events {
				sv.hashes = append(sv.hashes, idHash(e.ID))
			}
		}
		saves = append(saves, sv)
	}
	keys := s.eventKeys.Fingerprint()
	_ = chain.ForEachChunk(runtime.GOMAXPROCS(0), len(saves), func(_, lo, hi int) error {
		for _, sv := range saves[lo:hi] {
			if sv.chain {
				if sv.chainErr = writeChainCache(s.chainCachePath(sv.dir), sv.dir, keys, sv.c); sv.chainErr != nil {
					continue
				}
			}
			if sv.gate != nil {
				sv.written = s.writeGateFiles(sv.dir, keys, sv.gate, sv.hashes)
			}
		}
		return nil
	})
	for _, sv := range saves {
		if sv.chainErr != nil {
			s.logf("evidence: storing the chain of %s: %v", sv.dir, sv.chainErr)
			continue
		}
		sv.c.stored = true
		if sv.gate != nil {
			s.savedGateHead(sv.dir, sv.gate, sv.written)
			if err := sv.written.err; err != nil {
				s.logf("evidence: storing the gate summary of %s: %v", sv.dir, err)
			}
		}
	}
	s.saveCarriedGates()
}

func writeChainCache(path, dir, keys string, c *chainState) error {
	sc := storedChain{Keys: keys, Dir: dir, Tree: c.filesTree, Files: make([]storedFile, 0, len(c.files))}
	for _, f := range c.files {
		sc.Files = append(sc.Files, storedFile{Path: f.Path, Seq: f.Seq, Type: f.Type, Blob: f.Blob, Sig: f.Sig, HasSig: f.HasSig, Sum: f.Sum, Event: f.Event})
	}
	return writeSealed(path, chainCacheMagic, sc)
}

// readSealed decodes into v the file at path that writeSealed wrote with
// magic, or says why it cannot be used.
func readSealed(path, magic string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	body, ok := bytes.CutPrefix(b, []byte(magic))
	if !ok || len(body) < sha256.Size {
		return fmt.Errorf("%s: not a %s", path, strings.TrimSpace(magic))
	}
	body, sum := body[:len(body)-sha256.Size], body[len(body)-sha256.Size:]
	if want := sha256.Sum256(body); !bytes.Equal(sum, want[:]) {
		return fmt.Errorf("%s: checksum mismatch", path)
	}
	if err := gob.NewDecoder(bytes.NewReader(body)).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeSealed writes v to path after magic, ended by the sha256 of its
// encoding, so a torn or altered file is found out.
func writeSealed(path, magic string, v any) error {
	var body bytes.Buffer
	if err := gob.NewEncoder(&body).Encode(v); err != nil {
		return err
	}
	sum := sha256.Sum256(body.Bytes())
	return writeAtomic(path, slices.Concat([]byte(magic), body.Bytes(), sum[:]))
}

// writeAtomic replaces path with b: another process reads the old file or
// the new one.
func writeAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		// Only a temp file left behind needs removing: after the rename
		// there is none, and a remove per cached chain was a system call
		// for nothing.
		_ = os.Remove(tmp.Name())
	}
	return err
}
