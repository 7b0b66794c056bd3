package evidence

import (
	"context"
	"crypto"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// DefaultBranch is the evidence repo's branch unless WithBranch says
// otherwise.
const DefaultBranch = "main"

// Files in a store's state dir.
const (
	outboxFile  = "outbox.jsonl"
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
	// the old key, and the gate must still read them.
	TrustedEventKeys []crypto.PublicKey
	// AllowedCommitKeys are OpenPGP keys whose commits the store builds on
	// and reads, besides Keys.Commit's own (a rotated commit key, other
	// writers with their own keys). Nil allows only Keys.Commit.
	AllowedCommitKeys *signing.CommitKeyRing
}

// Store records events into the evidence repo. It implements
// runner.Recorder and runner.ChainHeader. The store owns the chains: for
// every event it writes it derives seq and preveventhash afresh from the
// repo head and re-signs, whatever the Emitter set, because another writer
// may have extended the chain since the Emitter asked.
type Store struct {
	cfg   Config
	retry Retry
	now   func() time.Time
	logf  func(format string, args ...any)
	auth  transport.AuthMethod

	branch plumbing.ReferenceName
	create bool

	// commitKeys are the keys a head's new commits must be signed by
	// before the store trusts it: Keys.Commit plus AllowedCommitKeys.
	commitKeys *signing.CommitKeyRing

	mu     sync.Mutex
	target target
	outbox outbox
	head   plumbing.Hash
	// checked holds heads whose first-parent history sync has already
	// found signed by allowed keys (and the heads this store pushed), so
	// a sync walks only the commits that are new since.
	checked  map[plumbing.Hash]bool
	synced   bool // head is what the remote had at our last fetch or push
	degraded bool // the last drain failed; ordinary events stop retrying
	chains   map[string]*chainState
	blobs    map[plumbing.Hash]blobInfo
}

var (
	_ runner.Recorder    = (*Store)(nil)
	_ runner.ChainHeader = (*Store)(nil)
)

// Option configures optional behaviour of a Store.
type Option func(*Store)

// WithBranch sets the branch events are pushed to (default "main").
func WithBranch(name string) Option {
	return func(s *Store) { s.branch = plumbing.NewBranchReferenceName(name) }
}

// WithBasicAuth authenticates https pushes and fetches, e.g. a forge token
// from NOVA_EVIDENCE_TOKEN (username "x-access-token" works for GitHub and
// Gitea). The token is never put into a URL, an error or a log line.
func WithBasicAuth(username, token string) Option {
	return func(s *Store) {
		if token != "" {
			s.auth = &githttp.BasicAuth{Username: username, Password: token}
		}
	}
}

// WithAuth sets any go-git transport auth (ssh keys, say).
func WithAuth(auth transport.AuthMethod) Option { return func(s *Store) { s.auth = auth } }

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
	if cfg.Keys.Events == nil || cfg.Keys.Commit == nil {
		return nil, runner.Errorf(runner.EvidenceKeyInvalid, "evidence store needs an event key and a commit key")
	}
	s := &Store{
		cfg:     cfg,
		retry:   DefaultRetry,
		now:     time.Now,
		logf:    func(string, ...any) {},
		branch:  plumbing.NewBranchReferenceName(DefaultBranch),
		chains:  map[string]*chainState{},
		blobs:   map[plumbing.Hash]blobInfo{},
		checked: map[plumbing.Hash]bool{},
	}
	s.commitKeys = cfg.Keys.Commit.KeyRing().With(cfg.AllowedCommitKeys)
	for _, o := range opts {
		o(s)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, runner.Errorf(runner.EventWriteFailed, "creating evidence state dir: %w", err)
	}
	s.outbox = outbox{path: filepath.Join(cfg.StateDir, outboxFile)}
	lock, err := lockFile(filepath.Join(cfg.StateDir, lockName))
	if err != nil {
		return nil, runner.Errorf(runner.EventWriteFailed, "%w", err)
	}
	defer lock.unlock()
	if s.target, err = s.openTarget(); err != nil {
		return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "%w", err)
	}
	if err := s.sync(ctx); err != nil {
		s.logf("evidence: %v; events stay in the outbox until the repo can be written", err)
	}
	return s, nil
}

// openTarget picks how to reach the repo: a bare repo given as a plain
// local path is written in place; anything else (a URL, file://, a
// non-bare path) goes through git's transport from a clone in the state
// dir.
func (s *Store) openTarget() (target, error) {
	repo := s.cfg.Repo
	if isLocalPath(repo) && !strings.HasPrefix(repo, "file://") {
		p, err := filepath.Abs(repo)
		if err != nil {
			return nil, fmt.Errorf("evidence repo path: %w", err)
		}
		if s.create {
			if err := initBareIfMissing(p, s.branch); err != nil {
				return nil, err
			}
		}
		if isBareRepo(p) {
			return openBare(p, s.branch)
		}
		repo = p
	}
	return openClone(filepath.Join(s.cfg.StateDir, cloneDir), repo, s.branch, s.auth)
}

// Record implements runner.Recorder. The event is appended to the outbox
// and fsynced first; only then is the outbox drained to the repo.
//
// For nova.apply.authorized a failed push is an error (EVIDENCE_PUSH_FAILED):
// apply must not start on an authorization nobody else can see, so the run
// stops and the outbox keeps the events for the next run. For every other
// event type a failed push is not an error: the event is durable in the
// outbox, Record returns nil, and the next Record or Drain delivers it.
// After a failed push, later ordinary events are only appended until an
// authorizing event or Drain tries again, so a run with the repo down is
// not slowed by a retry per event.
func (s *Store) Record(ctx context.Context, e runner.Event) error {
	if err := checkEventNames(e); err != nil {
		return runner.Errorf(runner.EventWriteFailed, "recording event: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lock, err := lockFile(filepath.Join(s.cfg.StateDir, lockName))
	if err != nil {
		return runner.Errorf(runner.EventWriteFailed, "%w", err)
	}
	defer lock.unlock()
	if err := s.outbox.add(e); err != nil {
		return runner.Errorf(runner.EventWriteFailed, "recording %s event: %w", e.Type, err)
	}
	critical := e.Type == runner.EventApplyAuthorized
	if s.degraded && !critical {
		// The remote failed moments ago; retrying for every event would
		// stall the run without changing the outcome.
		return nil
	}
	if err := s.drain(ctx); err != nil {
		if runner.ReasonOf(err) == runner.ApplyIndeterminate {
			return err
		}
		s.degraded = true
		if critical {
			if untrustedHead(err) {
				return err
			}
			return runner.Errorf(runner.EvidencePushFailed, "pushing %s event %s: %w", e.Type, e.ID, err)
		}
		s.logf("evidence: %v; the event is kept in the outbox", err)
		return nil
	}
	s.degraded = false
	return nil
}

// Drain pushes every event waiting in the outbox, in order. Call it at the
// end of a run (and at the start of the next) so nothing waits for the
// next authorizing event.
func (s *Store) Drain(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lock, err := lockFile(filepath.Join(s.cfg.StateDir, lockName))
	if err != nil {
		return runner.Errorf(runner.EventWriteFailed, "%w", err)
	}
	defer lock.unlock()
	if err := s.drain(ctx); err != nil {
		s.degraded = true
		if untrustedHead(err) {
			return err
		}
		return runner.Errorf(runner.EvidencePushFailed, "draining the evidence outbox: %w", err)
	}
	s.degraded = false
	return nil
}

// Close releases the files the store keeps open. It does not drain: call
// Drain first to push what is pending.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.target.release()
}

// Pending returns the events still waiting in the outbox.
func (s *Store) Pending() ([]runner.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outbox.load()
}

// WitnessPath is the file recording every head this store pushed; give it
// to Verify (`nova evidence verify --witness`) to detect history rewrites.
func (s *Store) WitnessPath() string { return WitnessFile(s.cfg.StateDir) }

// Head is the evidence repo head as of the last fetch or push.
func (s *Store) Head() plumbing.Hash {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head
}

// ChainHead implements runner.ChainHeader. It is advisory: the store
// re-derives seq and preveventhash when it writes, so a head that moved
// meanwhile costs nothing but a renumbering. Pending outbox events of the
// contract count as part of the chain, so numbering within a run stays
// continuous while the remote is down.
func (s *Store) ChainHead(ctx context.Context, contractID string) (int64, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lock, err := lockFile(filepath.Join(s.cfg.StateDir, lockName))
	if err != nil {
		return 0, "", err
	}
	defer lock.unlock()
	if !s.synced {
		if err := s.sync(ctx); err != nil {
			s.logf("evidence: %v; numbering from the last known head", err)
		}
	}
	st, err := s.chainAt(s.head, contractDir(contractID))
	if err != nil {
		return 0, "", err
	}
	seq, hash := st.seq, st.hash
	pending, err := s.outbox.load()
	if err != nil {
		return 0, "", err
	}
	for _, p := range pending {
		if p.ContractID == contractID && !st.ids[p.ID] {
			seq++
			if hash, err = p.Hash(); err != nil {
				return 0, "", err
			}
		}
	}
	return seq, hash, nil
}

// StateDirFor is the state dir of repo under base: one per evidence repo,
// so two repos never share an outbox or a witness.
func StateDirFor(base, repo string) string {
	return filepath.Join(base, repoKey(repo))
}

func trimFileScheme(p string) string {
	if len(p) > len("file://") && p[:len("file://")] == "file://" {
		return p[len("file://"):]
	}
	return p
}
