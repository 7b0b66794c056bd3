package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Event types: the one controlled vocabulary, so consumers can subscribe by
// type and auditors can read a chain without knowing which package wrote it.
const (
	EventContractValidated  = "nova.contract.validated"
	EventPolicyEvaluated    = "nova.policy.evaluated"
	EventNFREvaluated       = "nova.nfr.evaluated"
	EventConfidenceComputed = "nova.confidence.computed"
	EventDecisionMade       = "nova.ai.decision.made"
	EventPlanCreated        = "nova.plan.created"
	EventPlanLoaded         = "nova.plan.loaded"
	EventApprovalRequested  = "nova.approval.requested"
	EventApprovalRecorded   = "nova.approval.recorded"
	EventApprovalRejected   = "nova.approval.rejected"
	EventApprovalChecked    = "nova.approval.checked"
	EventApprovalEscalated  = "nova.approval.escalated"
	EventApprovalRefused    = "nova.approval.refused"
	EventAttestation        = "nova.attestation.recorded"
	EventApplyAuthorized    = "nova.apply.authorized"
	EventApplyCompleted     = "nova.apply.completed"
	EventApplyIndeterminate = "nova.apply.indeterminate"
	EventApplyResolved      = "nova.apply.resolved"
	EventRunFailed          = "nova.run.failed"
	EventDriftDetected      = "nova.drift.detected"
	EventDriftClear         = "nova.drift.clear"
	EventChangeIdentified   = "nova.change.identified"
	EventChangeReceipt      = "nova.change.receipt"
	EventLockChecked        = "nova.lock.checked"
	EventLockReleased       = "nova.lock.released"
	// Break-glass (breakglass.go).
	EventBreakGlassRequested = "nova.breakglass.requested"
	EventBreakGlassApproved  = "nova.breakglass.approved"
	EventBreakGlassGranted   = "nova.breakglass.granted"
	EventBreakGlassRevoked   = "nova.breakglass.revoked"
	EventBreakGlassUsed      = "nova.breakglass.used"
	EventBreakGlassReviewed  = "nova.breakglass.reviewed"
	EventBreakGlassRefused   = "nova.breakglass.refused"
	EventDestroyIdentified   = "nova.destroy.identified"
	EventDestroyCompleted    = "nova.destroy.completed"
	EventRollbackRequested   = "nova.rollback.requested"
	EventMergeChecked        = "nova.merge.checked"
)

// Event is a CloudEvents 1.0 envelope in its JSON format.
//
// CloudEvents requires extension attribute names to be lowercase letters and
// digits, so the chain fields the design calls runId, contractId, seq and
// prevEventHash are spelled runid, contractid, seq and preveventhash here;
// any CloudEvents SDK can then parse Nova's events unmodified.
type Event struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Subject         string          `json:"subject,omitempty"`
	Time            time.Time       `json:"time"`
	DataContentType string          `json:"datacontenttype"`
	RunID           string          `json:"runid"`
	ContractID      string          `json:"contractid"`
	Environment     string          `json:"environment,omitempty"`
	Seq             int64           `json:"seq"`
	PrevEventHash   string          `json:"preveventhash"`
	Data            json.RawMessage `json:"data,omitempty"`
}

// Canonical returns the event's canonical serialization: the exact bytes
// that are hashed into the next event's preveventhash and signed.
func (e Event) Canonical() ([]byte, error) { return Canonical(e) }

// canonicalOver is e.Canonical() for an event whose Data is data, already
// canonical (Canonical's output): only the envelope is encoded, decoded
// and sorted, and data goes in as it is. Canonical of canonical JSON is
// itself, so the bytes are those of e.Canonical(); encoding the whole
// event's data twice more was a tenth of what an Emit cost.
func (e Event) canonicalOver(data json.RawMessage) ([]byte, error) {
	e.Data = nil
	envelope, err := Canonical(e)
	if err != nil || len(data) == 0 {
		return envelope, err
	}
	var fields map[string]any
	dec := json.NewDecoder(bytes.NewReader(envelope))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil {
		return nil, fmt.Errorf("re-reading JSON: %w", err)
	}
	fields["data"] = data
	return marshalNoEscape(fields)
}

// Hash is the lowercase hex sha256 of the canonical serialization; a file
// holding the canonical bytes therefore matches `sha256sum`.
func (e Event) Hash() (string, error) { return Digest(e) }

// CanonicalRecorder is implemented by recorders that write an event's
// canonical form: the Emitter, which computes it anyway to hash the
// event, hands it over so no recorder computes it again (the canonical
// JSON, three times per event, was a tenth of validating many
// contracts). canonical is exactly e.Canonical()'s bytes.
type CanonicalRecorder interface {
	RecordCanonical(ctx context.Context, e Event, canonical []byte) error
}

// record records e with rec, handing over its canonical form when rec
// takes it.
func record(ctx context.Context, rec Recorder, e Event, canonical []byte) error {
	if cr, ok := rec.(CanonicalRecorder); ok {
		return cr.RecordCanonical(ctx, e, canonical)
	}
	return rec.Record(ctx, e)
}

// Recorder persists events durably. Record must not return before the event
// is on stable storage: the runner treats a recorded event as acknowledged.
type Recorder interface {
	Record(ctx context.Context, e Event) error
}

// ChainHeader is implemented by recorders that know a contract's chain
// across runs (the evidence repo); an Emitter continues from that head
// instead of starting a new chain.
type ChainHeader interface {
	ChainHead(ctx context.Context, contractID string) (seq int64, hash string, err error)
}

// Flusher is implemented by recorders that make an event durable before
// they make it visible to others (the evidence repo pushes its outbox in
// batches). Flush makes a contract's recorded events visible: a run calls
// it where another run must see them, as before it gives up its run lock.
type Flusher interface {
	Flush(ctx context.Context, contractID string) error
}

// Emitter seals events into per-contract hash chains and hands them to a
// Recorder. It is safe for concurrent use: events of one contract are
// sealed and recorded one at a time, in the order Emit is called, while
// different contracts proceed in parallel (many contracts in one run).
type Emitter struct {
	rec    Recorder
	source string
	runID  string
	now    func() time.Time

	mu    sync.Mutex
	heads map[string]*chainHead
}

type chainHead struct {
	// mu is held from reading the head to storing the next one, across
	// Record: two events of one contract must never claim the same seq.
	mu    sync.Mutex
	known bool
	seq   int64
	hash  string
}

// NewEmitter returns an Emitter for one run. source is the CloudEvents
// source, identifying where the run happened.
func NewEmitter(rec Recorder, source, runID string, now func() time.Time) *Emitter {
	if now == nil {
		now = time.Now
	}
	return &Emitter{rec: rec, source: source, runID: runID, now: now, heads: map[string]*chainHead{}}
}

// MaxEventData is the largest event data Nova writes. Every event is kept
// forever, pushed as a commit, read back whole by the gate and by verify;
// one that outgrows this (a plan record of tens of thousands of resources)
// is refused rather than written, and the run stops saying so.
const MaxEventData = 4 << 20

// Emit builds, chains and records one event.
func (em *Emitter) Emit(ctx context.Context, typ, contractID string, env Environment, data any) (Event, error) {
	raw, err := Canonical(data)
	if err != nil {
		return Event{}, Errorf(EventWriteFailed, "encoding %s event data: %w", typ, err)
	}
	if len(raw) > MaxEventData {
		return Event{}, Errorf(EventTooLarge, "the %s event's data is %d bytes, more than the %d an event may hold; it was not written", typ, len(raw), MaxEventData)
	}
	em.mu.Lock()
	head, ok := em.heads[contractID]
	if !ok {
		head = &chainHead{}
		em.heads[contractID] = head
	}
	em.mu.Unlock()
	head.mu.Lock()
	defer head.mu.Unlock()
	if !head.known {
		if h, isHeader := em.rec.(ChainHeader); isHeader {
			head.seq, head.hash, err = h.ChainHead(ctx, contractID)
			if err != nil {
				return Event{}, Errorf(EventWriteFailed, "reading chain head of contract %q: %w", contractID, err)
			}
		}
		head.known = true
	}
	e := Event{
		SpecVersion:     "1.0",
		ID:              uuid.NewString(),
		Source:          em.source,
		Type:            typ,
		Subject:         contractID,
		Time:            em.now().UTC(),
		DataContentType: "application/json",
		RunID:           em.runID,
		ContractID:      contractID,
		Environment:     string(env),
		Seq:             head.seq + 1,
		PrevEventHash:   head.hash,
		Data:            raw,
	}
	// The event's hash is Digest(e): the sha256 of this canonical form.
	canonical, err := e.canonicalOver(raw)
	if err != nil {
		return Event{}, Errorf(EventWriteFailed, "hashing %s event: %w", typ, err)
	}
	sum := sha256.Sum256(canonical)
	hash := hex.EncodeToString(sum[:])
	if err := record(ctx, em.rec, e, canonical); err != nil {
		// A recorder that knows why it failed (the evidence push, say)
		// keeps its reason; anything else is a failed write.
		reason := EventWriteFailed
		var re *Error
		if errors.As(err, &re) {
			reason = re.Reason
		}
		return Event{}, Errorf(reason, "recording %s event: %w", typ, err)
	}
	head.seq, head.hash = e.Seq, hash
	return e, nil
}

// Flush makes the contract's recorded events visible to others when the
// recorder buffers them (Flusher); otherwise they already are.
func (em *Emitter) Flush(ctx context.Context, contractID string) error {
	if f, ok := em.rec.(Flusher); ok {
		return f.Flush(ctx, contractID)
	}
	return nil
}
