package evidence

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// Files in a store's state dir.
const (
	outboxDir   = "outbox"
	witnessFile = "witness"
	lockName    = "lock"
	cloneDir    = "clone.git"
)

// Config holds what a Store cannot work without.
type Config struct {
	// Repo is the evidence repo: a local path (bare or not), a file:// URL
	// or a remote URL (https with a token, ssh).
	Repo string
	// StateDir holds the outbox, the witness of pushed heads and the local
	// clone. It must be private to one evidence repo; StateDirFor derives
	// one from a base dir and Repo.
	StateDir string
	// Keys sign events and commits.
	Keys signing.Keys
	// TrustedEventKeys are event public keys accepted besides Keys.Events'
	// own: after a key rotation a contract's older events stay signed by
	// the old key, and the store must still read them.
	TrustedEventKeys []crypto.PublicKey
	// AllowedCommitKeys are OpenPGP keys whose commits the store builds on
	// and reads, besides Keys.Commit's own (a rotated commit key, other
	// writers with their own keys). Nil allows only Keys.Commit.
	AllowedCommitKeys *signing.CommitKeyRing
	// Signers verifies keyless event signatures (keyless.Policy: the
	// Fulcio root and the identities .nova/signers.yml names). Required
	// when Keys.Keyless signs, so the store can read back what it wrote;
	// nil refuses every keyless signature.
	Signers signing.KeylessVerifier
}

// Store records events into the evidence repo. It implements
// runner.Recorder, runner.ChainHeader and runner.EvidenceReader, and is
// safe for concurrent use: events of different contracts are delivered
// independently, and no lock is held across a fetch or a push.
//
// The store owns the chains: for every event it writes it derives seq and
// preveventhash afresh from the repo head and re-signs, whatever the
// Emitter set, because another writer may have extended the chain since
// the Emitter asked.
type Store struct {
	cfg    Config
	retry  Retry
	now    func() time.Time
	logf   func(format string, args ...any)
	creds  chain.Credentials
	branch plumbing.ReferenceName
	create bool

	// commitKeys must have signed every commit of a head before the store
	// trusts it; eventKeys every event of a chain it reads.
	commitKeys *signing.CommitKeyRing
	eventKeys  *signing.KeySet
	outbox     outbox

	// mu guards what follows, the target's object store included (go-git's
	// is not safe for concurrent use). It is never held across network
	// I/O: a fetch or push runs on what was read under it, and the result
	// is recorded under it again.
	mu      sync.Mutex
	target  gitrepo.Remote
	objects *gitrepo.Reader
	head    plumbing.Hash
	synced  bool // head is what the remote had at our last fetch or push
	// ticket orders what the store learns of the head: a fetch that began
	// before head was last set (by a push, or a fetch begun later) may
	// have seen an older head, so it does not replace it.
	ticket, headTicket uint64
	// checked holds heads whose first-parent history sync has already
	// found signed by allowed keys (and the heads this store pushed), so
	// a sync walks only the commits that are new since.
	checked map[plumbing.Hash]bool
	chains  map[string]*chainState
	// gates are the stored gate heads read, by contract directory (nil:
	// none usable).
	gates map[string]*gateHead
	// delivering serialises the delivery of one contract's outbox.
	delivering map[string]*sync.Mutex
}

var (
	_ runner.Recorder          = (*Store)(nil)
	_ runner.CanonicalRecorder = (*Store)(nil)
	_ runner.ChainHeader       = (*Store)(nil)
	_ runner.EvidenceReader    = (*Store)(nil)
	_ runner.GateSummaryReader = (*Store)(nil)
)

// Option configures optional behaviour of a Store.
type Option func(*Store)

// WithBranch sets the branch events are pushed to (default "main").
func WithBranch(name string) Option {
	return func(s *Store) { s.branch = plumbing.NewBranchReferenceName(name) }
}

// WithBasicAuth authenticates https pushes and fetches, e.g. a forge token
// from NOVA_EVIDENCE_TOKEN. It takes precedence over credentials in the
// repo URL; the token is never put into a URL, a file, an error or a log.
func WithBasicAuth(username, token string) Option {
	return func(s *Store) {
		if token != "" {
			s.creds = chain.Credentials{Username: username, Password: token}
		}
	}
}

// WithCreate makes Open create a bare repo at Repo when it is a local path
// that does not exist yet: local mode's evidence repo on first use.
func WithCreate() Option { return func(s *Store) { s.create = true } }

// WithRetry replaces the push retry policy.
func WithRetry(r Retry) Option { return func(s *Store) { s.retry = r } }

// WithClock sets the clock used for commit times.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithLogf receives warnings that do not fail a Record (events kept in the
// outbox for later).
func WithLogf(logf func(format string, args ...any)) Option { return func(s *Store) { s.logf = logf } }

// Open prepares a Store: the state dir, the local clone, and a first fetch.
// An unreachable remote does not fail Open — events still reach the outbox
// and the first Record that must be pushed reports the failure.
func Open(ctx context.Context, cfg Config, opts ...Option) (*Store, error) {
	if cfg.Repo == "" || cfg.StateDir == "" {
		return nil, runner.Errorf(runner.ConfigInvalid, "evidence store needs a repo and a state dir")
	}
	if (cfg.Keys.Events == nil && cfg.Keys.Keyless == nil) || cfg.Keys.Commit == nil {
		return nil, runner.Errorf(runner.EvidenceKeyInvalid, "evidence store needs an event key (or keyless signing) and a commit key")
	}
	if cfg.Keys.Keyless != nil && cfg.Signers == nil {
		return nil, runner.Errorf(runner.SignersConfigInvalid, "keyless signing needs the signers policy (%s and the Fulcio root) to read back its own events", ".nova/signers.yml")
	}
	var eventPubs []crypto.PublicKey
	if cfg.Keys.Events != nil {
		eventPubs = append(eventPubs, cfg.Keys.Events.PublicKey())
	}
	eventKeys, err := signing.NewKeylessKeySet(cfg.Signers, append(eventPubs, cfg.TrustedEventKeys...)...)
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceKeyInvalid, "%w", err)
	}
	s := &Store{
		cfg:        cfg,
		retry:      DefaultRetry,
		now:        time.Now,
		logf:       func(string, ...any) {},
		branch:     plumbing.NewBranchReferenceName(chain.DefaultBranch),
		commitKeys: cfg.Keys.Commit.KeyRing().With(cfg.AllowedCommitKeys),
		eventKeys:  eventKeys,
		outbox:     outbox{dir: filepath.Join(cfg.StateDir, outboxDir), lock: filepath.Join(cfg.StateDir, lockName), held: &heldLock{}},
		checked:    map[plumbing.Hash]bool{},
		chains:     map[string]*chainState{},
		gates:      map[string]*gateHead{},
		delivering: map[string]*sync.Mutex{},
	}
	for _, o := range opts {
		o(s)
	}
	if err := os.MkdirAll(s.outbox.dir, 0o700); err != nil {
		return nil, runner.Errorf(runner.EventWriteFailed, "creating evidence state dir: %w", err)
	}
	if err := s.outbox.migrate(filepath.Join(cfg.StateDir, legacyOutbox)); err != nil {
		s.outbox.held.close()
		return nil, runner.Errorf(runner.EventWriteFailed, "moving the outbox to one file per contract: %w", err)
	}
	// The clone's config is a local file other processes may rewrite too.
	err = s.outbox.locked(func() (err error) {
		s.target, err = s.openTarget()
		return err
	})
	if err != nil {
		s.outbox.held.close()
		return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "%w", err)
	}
	s.objects = gitrepo.NewReader(s.target.Objects())
	if _, err := s.sync(ctx); err != nil {
		s.logf("evidence: %v; events stay in the outbox until the repo can be written", err)
	}
	return s, nil
}

// openTarget picks how to reach the repo: a bare repo given as a plain
// local path is written in place; anything else (a URL, file://, a
// non-bare path) goes through git's transport from a clone in the state
// dir.
func (s *Store) openTarget() (gitrepo.Remote, error) {
	repo := s.cfg.Repo
	if chain.IsLocalPath(repo) && !strings.HasPrefix(repo, "file://") {
		p, err := filepath.Abs(repo)
		if err != nil {
			return nil, fmt.Errorf("evidence repo path: %w", err)
		}
		if s.create {
			if err := gitrepo.InitBare(p, s.branch); err != nil {
				return nil, err
			}
		}
		if gitrepo.IsBare(p) {
			return gitrepo.OpenBare(p, s.branch, syncAll, s.logf)
		}
		repo = p
	}
	url, creds := chain.SplitCredentials(repo, s.creds)
	return gitrepo.OpenClone(filepath.Join(s.cfg.StateDir, cloneDir), url, s.branch, creds.Auth())
}

// Close stores the chains it verified for the next process (chain_cache.go)
// and releases the files the store keeps open. It does not drain: call
// Drain first to push what is pending.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saveChains()
	defer s.outbox.held.close()
	return s.target.Close()
}

// Pending returns the events still waiting in the outbox, contract by
// contract.
func (s *Store) Pending() ([]runner.Event, error) { return s.outbox.all() }

// DeferOutboxSync makes Record leave the outbox's fsync to SyncOutbox:
// the sync moves from every event to the command's step that acts on
// them. It is for a command none of whose stages has an effect outside
// the process before it reports (`nova validate` of many contracts): an
// event counts as durable when it is acted on, and such a command acts
// on its events only at its end, by pushing them (Drain: the push makes
// them durable in the repo, the in-place target syncing pack and branch)
// and reporting the outcome. Call SyncOutbox after Drain and before
// anything reports: what the push did not deliver is then durable in the
// outbox before anyone can see an outcome that rests on it. A crash of
// the process loses nothing (the writes are in the kernel's cache); a
// power cut before SyncOutbox loses only events of an outcome nobody has
// seen, as if the command had not run. An authorization is never
// deferred: Record syncs every pending append before pushing it. One
// sync per event was the second largest cost of validating 10 000
// contracts: 40 000 journal commits. Call it before anything is
// recorded.
func (s *Store) DeferOutboxSync() {
	if s.outbox.unsynced == nil {
		s.outbox.unsynced = &unsyncedFiles{paths: map[string]bool{}}
	}
}

// SyncOutbox makes every append Record deferred durable, the files that
// still hold events all at once. A file a drain emptied since holds
// nothing to keep, and is skipped.
func (s *Store) SyncOutbox() error {
	if s.outbox.unsynced == nil {
		return nil
	}
	var paths, dirs []string
	err := s.outbox.locked(func() error {
		for _, p := range s.outbox.unsynced.take() {
			fi, err := os.Stat(p)
			switch {
			case errors.Is(err, os.ErrNotExist):
			case err != nil:
				return err
			case fi.IsDir():
				dirs = append(dirs, p)
			case fi.Size() > 0:
				paths = append(paths, p)
			}
		}
		return nil
	})
	if err == nil {
		err = chain.ForEachChunk(outboxSyncers, len(paths), func(_, lo, hi int) error {
			for _, p := range paths[lo:hi] {
				if err := syncPath(p); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err == nil && len(paths) > 0 {
		// A new file's directory entry after its content.
		err = syncAll(dirs...)
	}
	if err != nil {
		return runner.Errorf(runner.EventWriteFailed, "syncing the evidence outbox: %w", err)
	}
	return nil
}

// outboxSyncers is how many outbox files SyncOutbox syncs at once: the
// file system commits concurrent syncs together.
const outboxSyncers = 32

// WitnessPath is the file recording every head this store pushed; give it
// to Verify (`nova evidence verify --witness`) to detect history rewrites.
func (s *Store) WitnessPath() string { return WitnessFile(s.cfg.StateDir) }

// Head is the evidence repo head as of the last fetch or push, "" when the
// branch has no commit yet.
func (s *Store) Head() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head.IsZero() {
		return ""
	}
	return s.head.String()
}

// StateDirFor is the state dir of repo under base: one per evidence repo,
// so two repos never share an outbox or a witness.
func StateDirFor(base, repo string) string {
	return filepath.Join(base, repoKey(repo))
}

// repoKey names a repo's state dir: a digest of its credential-free
// address, so a token never lands in a path.
func repoKey(repo string) string {
	addr := chain.RedactURL(repo)
	if chain.IsLocalPath(repo) {
		if p, err := filepath.Abs(chain.TrimFileScheme(repo)); err == nil {
			addr = p
		}
	}
	sum := sha256.Sum256([]byte(addr))
	return hex.EncodeToString(sum[:8])
}

func short(h plumbing.Hash) string { return h.String()[:12] }
