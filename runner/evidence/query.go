package evidence

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// ApprovalData is the data of a nova.approval.recorded event.
type ApprovalData struct {
	Environment runner.Environment `json:"environment"`
	Approver    string             `json:"approver"`
	PlanDigest  string             `json:"planDigest"`
}

// ResolutionData is the data of a nova.apply.resolved event.
type ResolutionData struct {
	// Outcome is what the operator found: applied or not-applied.
	Outcome string `json:"outcome"`
	Note    string `json:"note"`
	// Resolves is the id of the nova.apply.indeterminate event.
	Resolves string `json:"resolves"`
	// ResolvedBy is who established the outcome.
	ResolvedBy string `json:"resolvedBy"`
}

// Resolution outcomes.
const (
	OutcomeApplied    = "applied"
	OutcomeNotApplied = "not-applied"
)

// Approval is one recorded approval with where it came from.
type Approval struct {
	ApprovalData
	EventID string `json:"eventId"`
	Seq     int64  `json:"seq"`
}

// Reader answers the gate's questions from one version of the evidence
// repo. With a KeySet it returns only events whose signature verifies, so
// someone who can push to the repo but does not hold the signing key
// cannot forge an approval; Events also refuses a directory that is not
// one unbroken chain of its contract's events. A Reader is not safe for
// use concurrently with the Store it came from.
type Reader struct {
	st   storer.EncodedObjectStorer
	head plumbing.Hash
	keys *signing.KeySet
}

// NewReader reads repo at head, verifying event signatures with keys when
// keys is not nil.
func NewReader(repo *git.Repository, head plumbing.Hash, keys *signing.KeySet) *Reader {
	return &Reader{st: repo.Storer, head: head, keys: keys}
}

// Reader fetches the evidence repo and returns a Reader over its head.
// A gate must not decide on a stale copy (it could miss an indeterminate
// apply recorded elsewhere), so an unreachable repo is an error. Events are
// verified with the store's own key and any extra trusted keys.
func (s *Store) Reader(ctx context.Context, trusted ...crypto.PublicKey) (*Reader, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.sync(ctx); err != nil {
		if untrustedHead(err) {
			return nil, err
		}
		return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "reading the evidence repo: %w", err)
	}
	return s.readerAt(s.head, trusted...)
}

// readerAt reads the store's objects at head, trusting the store's own
// event key, the configured TrustedEventKeys (a rotation's old keys) and
// any extra keys. The caller holds s.mu.
func (s *Store) readerAt(head plumbing.Hash, trusted ...crypto.PublicKey) (*Reader, error) {
	keys := append([]crypto.PublicKey{s.cfg.Keys.Events.PublicKey()}, s.cfg.TrustedEventKeys...)
	ks, err := signing.NewKeySet(append(keys, trusted...)...)
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceKeyInvalid, "%w", err)
	}
	return &Reader{st: s.target.objects(), head: head, keys: ks}, nil
}

// Events returns a contract's events in seq order. The gate decides on what
// this returns, so it accepts a contract directory only when it holds one
// unbroken chain: every file inside the layout, every event signed, naming
// this contract and the type and seq of its file name, seq continuous from
// 1 and each preveventhash the sha256 of the previous event file. Anything
// else is an error with verify's reason code — never a shorter list, which
// would let someone who can push but not sign hide an indeterminate apply
// (delete it, renumber it) or settle it with a signed event copied from
// another contract.
func (r *Reader) Events(contractID string) ([]runner.Event, error) {
	if r.head.IsZero() {
		return nil, nil
	}
	c, err := object.GetCommit(r.st, r.head)
	if err != nil {
		return nil, fmt.Errorf("reading evidence head: %w", err)
	}
	root, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("reading evidence tree: %w", err)
	}
	dirName := contractDir(contractID)
	dir, err := root.Tree(contractsDir + "/" + dirName)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading contract %s: %w", contractID, err)
	}
	type eventEntry struct {
		name string
		file eventFile
		hash plumbing.Hash
	}
	sigs := map[string]plumbing.Hash{}
	var files []eventEntry
	for _, e := range dir.Entries {
		f, ok := parseEventFileName(e.Name)
		if !ok || !e.Mode.IsFile() {
			return nil, runner.Errorf(runner.EvidenceLayoutInvalid, "%s/%s/%s is not <seq>-<type>.json or .sig", contractsDir, dirName, e.Name)
		}
		if f.Sig {
			sigs[e.Name] = e.Hash
			continue
		}
		files = append(files, eventEntry{name: e.Name, file: f, hash: e.Hash})
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].file.Seq < files[j].file.Seq })
	events := make([]runner.Event, 0, len(files))
	prev := ""
	for i, entry := range files {
		path := contractsDir + "/" + dirName + "/" + entry.name
		if want := int64(i + 1); entry.file.Seq != want {
			if i > 0 && entry.file.Seq == files[i-1].file.Seq {
				return nil, runner.Errorf(runner.EvidenceChainBroken, "%s: two events claim seq %d", path, entry.file.Seq)
			}
			return nil, runner.Errorf(runner.EvidenceChainBroken, "%s/%s: seq %d is missing", contractsDir, dirName, want)
		}
		b, err := readBlob(r.st, entry.hash)
		if err != nil {
			return nil, err
		}
		if r.keys != nil {
			sh, ok := sigs[sigPath(entry.name)]
			if !ok {
				return nil, runner.Errorf(runner.EvidenceSignatureInvalid, "event %s has no signature", path)
			}
			sig, err := readBlob(r.st, sh)
			if err != nil {
				return nil, err
			}
			if err := r.keys.Verify(b, sig); err != nil {
				return nil, runner.Errorf(runner.EvidenceSignatureInvalid, "event %s: %w", path, err)
			}
		}
		var e runner.Event
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, runner.Errorf(runner.EvidenceLayoutInvalid, "reading event %s: %w", path, err)
		}
		// A signature proves who wrote the bytes, not where they belong:
		// the event itself must say it is this contract's, of this type.
		if contractDir(e.ContractID) != dirName || e.Type != entry.file.Type {
			return nil, runner.Errorf(runner.EvidenceLayoutInvalid, "%s: event is %s of contract %q, its path says %s of %s", path, e.Type, e.ContractID, entry.file.Type, dirName)
		}
		if e.Seq != entry.file.Seq {
			return nil, runner.Errorf(runner.EvidenceChainBroken, "%s: event says seq %d, its file is seq %d", path, e.Seq, entry.file.Seq)
		}
		if e.PrevEventHash != prev {
			return nil, runner.Errorf(runner.EvidenceChainBroken, "%s: preveventhash %s does not match the previous event file (%s)", path, shortSum(e.PrevEventHash), shortSum(prev))
		}
		sum := sha256.Sum256(b)
		prev = hex.EncodeToString(sum[:])
		events = append(events, e)
	}
	return events, nil
}

// LastEvent returns the newest event of a contract; ok is false when the
// contract has none.
func (r *Reader) LastEvent(contractID string) (e runner.Event, ok bool, err error) {
	events, err := r.Events(contractID)
	if err != nil || len(events) == 0 {
		return runner.Event{}, false, err
	}
	return events[len(events)-1], true, nil
}

// Approvals returns the approvals recorded for a contract in env, oldest
// first.
func (r *Reader) Approvals(contractID string, env runner.Environment) ([]Approval, error) {
	events, err := r.Events(contractID)
	if err != nil {
		return nil, err
	}
	var out []Approval
	for _, e := range events {
		if e.Type != runner.EventApprovalRecorded {
			continue
		}
		var a ApprovalData
		if err := decodeData(e.Data, &a); err != nil {
			return nil, runner.Errorf(runner.EvidenceLayoutInvalid, "reading approval %s: %w", e.ID, err)
		}
		if a.Environment == env {
			out = append(out, Approval{ApprovalData: a, EventID: e.ID, Seq: e.Seq})
		}
	}
	return out, nil
}

// ApprovedPlanDigest is the plan digest of the newest approval for a
// contract in env; ok is false when nothing was approved.
func (r *Reader) ApprovedPlanDigest(contractID string, env runner.Environment) (digest string, ok bool, err error) {
	approvals, err := r.Approvals(contractID, env)
	if err != nil || len(approvals) == 0 {
		return "", false, err
	}
	return approvals[len(approvals)-1].PlanDigest, true, nil
}

// UnresolvedIndeterminate returns the newest nova.apply.indeterminate event
// of a contract in env that no later nova.apply.resolved of the same
// environment settles, or nil. While it exists the gate refuses to apply
// there (APPLY_INDETERMINATE): nobody knows what the last apply did. Other
// environments of the same contract have their own state and are not held.
func (r *Reader) UnresolvedIndeterminate(contractID string, env runner.Environment) (*runner.Event, error) {
	events, err := r.Events(contractID)
	if err != nil {
		return nil, err
	}
	var open *runner.Event
	for i := range events {
		if events[i].Environment != string(env) {
			continue
		}
		switch events[i].Type {
		case runner.EventApplyIndeterminate:
			open = &events[i]
		case runner.EventApplyResolved:
			open = nil
		}
	}
	return open, nil
}

var _ runner.EvidenceReader = (*Store)(nil)

// Chain implements runner.EvidenceReader over the head as syncOrStale
// finds it: a stale head only answers questions about an authorization
// that must itself be pushed, and deliver re-checks it on the fresh head.
func (s *Store) Chain(ctx context.Context, contractID string) ([]runner.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.syncOrStale(ctx, "reading the chain"); err != nil {
		return nil, err
	}
	r, err := s.readerAt(s.head)
	if err != nil {
		return nil, err
	}
	return r.Events(contractID)
}

// UnresolvedApply implements runner.ApplyHistory. When the repo cannot be
// reached it answers from the last head this store knows, and says so: the
// answer only gates an authorization that must itself be pushed, and
// deliver re-checks on the repo's fresh head before it pushes one, so a
// stale "none" can never let an apply through. Failing here instead would
// report an unreachable repo as something other than the push failure it
// is.
func (s *Store) UnresolvedApply(ctx context.Context, contractID string, env runner.Environment) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.syncOrStale(ctx, "checking earlier applies"); err != nil {
		return "", err
	}
	return s.unresolvedAt(s.head, contractID, env)
}

// syncOrStale fetches the head for a gate question, falling back to the
// last known head when the repo cannot be reached (what is being decided
// must itself be pushed later, so a stale answer cannot let it through). A
// head refused as rewritten or carrying a commit no allowed key signed is
// not "unreachable": answering from the older head would hide exactly what
// the refusal is about. The caller holds s.mu.
func (s *Store) syncOrStale(ctx context.Context, what string) error {
	err := s.sync(ctx)
	if err == nil {
		return nil
	}
	if untrustedHead(err) {
		return err
	}
	s.logf("evidence: %v; %s against the last known head", err, what)
	return nil
}

// unresolvedAt is UnresolvedApply at a given head. The caller holds s.mu.
func (s *Store) unresolvedAt(head plumbing.Hash, contractID string, env runner.Environment) (string, error) {
	r, err := s.readerAt(head)
	if err != nil {
		return "", err
	}
	open, err := r.UnresolvedIndeterminate(contractID, env)
	if err != nil || open == nil {
		return "", err
	}
	return open.ID, nil
}

// decodeData reads event data into v, accepting both data recorded
// directly and data a pipeline stage wrapped as {"result": …}.
func decodeData(data json.RawMessage, v any) error {
	var wrapped struct {
		Stage  string          `json:"stage"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(data, &wrapped) == nil && wrapped.Stage != "" && len(wrapped.Result) > 0 {
		data = wrapped.Result
	}
	return json.Unmarshal(data, v)
}
