package runner

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Every authorization is also an in-toto attestation (Statement v1 in a DSSE
// envelope) signed with the event key: its subject is the saved plan file,
// and its predicate binds the plan digest, the engine, the contract and
// commit, the policy verdicts, the confidence and the approvals, so stock
// tooling (`cosign verify-blob-attestation`) can check the exact file that
// is applied against what authorized it.
const (
	// AttestationPredicateType is the predicate type of Nova's
	// authorization attestations (cosign's --type).
	AttestationPredicateType = "https://nova-platform.dev/attestation/authorization/v1"
	inTotoStatementType      = "https://in-toto.io/Statement/v1"
	inTotoPayloadType        = "application/vnd.in-toto+json"
	// maxPlanFileBytes bounds what is hashed as the subject: a saved plan
	// that large is not one Nova made.
	maxPlanFileBytes = 1 << 30
)

// Attestor signs bytes with the event key: ECDSA P-256 over SHA-256,
// base64-encoded ASN.1 DER, as cosign writes signatures.
type Attestor interface {
	Sign(msg []byte) ([]byte, error)
}

// Statement is an in-toto Statement v1.
type Statement struct {
	Type          string                 `json:"_type"`
	Subject       []StatementSubject     `json:"subject"`
	PredicateType string                 `json:"predicateType"`
	Predicate     AuthorizationPredicate `json:"predicate"`
}

// StatementSubject names an artifact by digest.
type StatementSubject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// AuthorizationPredicate is what an authorization binds.
type AuthorizationPredicate struct {
	ContractID     string       `json:"contractId"`
	Environment    Environment  `json:"environment"`
	PlanDigest     string       `json:"planDigest"`
	ContractDigest string       `json:"contractDigest"`
	Commit         string       `json:"commit"`
	Approver       string       `json:"approver"`
	Approvals      []string     `json:"approvals"`
	Verdicts       []PCRVerdict `json:"policyVerdicts"`
	Confidence     *Confidence  `json:"confidence,omitempty"`
	// Engine is the engine, at its exact version, that planned and
	// applies ("opentofu 1.12.6").
	Engine string `json:"engine,omitempty"`
	// Operation and Approvers are a destroy's (Authorization): a
	// verifier of the attestation alone sees what the plan does and who
	// let it.
	Operation Operation `json:"operation,omitempty"`
	Approvers []string  `json:"approvers,omitempty"`
}

// PCRVerdict is one policy record's outcome, without its evidence.
type PCRVerdict struct {
	Engine   string    `json:"engine"`
	RuleID   string    `json:"ruleId"`
	Severity Severity  `json:"severity"`
	Result   PCRResult `json:"result"`
}

// Envelope is a DSSE envelope.
type Envelope struct {
	PayloadType string              `json:"payloadType"`
	Payload     string              `json:"payload"`
	Signatures  []EnvelopeSignature `json:"signatures"`
}

// EnvelopeSignature is one DSSE signature.
type EnvelopeSignature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

// AttestationRecord is the data of a nova.attestation.recorded event.
type AttestationRecord struct {
	PredicateType string   `json:"predicateType"`
	PlanFile      string   `json:"planFile"`
	PlanSHA256    string   `json:"planSha256"`
	Envelope      Envelope `json:"envelope"`
	// Certificate is the signing certificate (PEM, leaf first, then its
	// chain) when the envelope was signed keylessly: what `cosign
	// verify-blob-attestation --certificate` checks it with.
	Certificate string `json:"certificate,omitempty"`
}

// certifiedAttestor is an Attestor whose signatures come with a
// certificate (keyless signing): it returns the one that signed.
type certifiedAttestor interface {
	SignCertified(msg []byte) (sig, certPEM []byte, err error)
}

// attestorFunc adapts a function to Attestor.
type attestorFunc func(msg []byte) ([]byte, error)

func (f attestorFunc) Sign(msg []byte) ([]byte, error) { return f(msg) }

// attestation builds and signs the attestation of st's authorization.
func attestation(ctx context.Context, signer Attestor, st *State) (AttestationRecord, error) {
	if err := ctx.Err(); err != nil {
		return AttestationRecord{}, err
	}
	sum, err := HashFile(st.Plan.PlanFile)
	if err != nil {
		return AttestationRecord{}, Errorf(PlanBundleInvalid, "hashing the saved plan for its attestation: %w", err)
	}
	pred := AuthorizationPredicate{
		ContractID: st.Contract.ID, Environment: st.Authorization.Environment, PlanDigest: st.Authorization.Digest,
		ContractDigest: st.ContractDigest, Commit: st.DigestCommit(), Engine: st.Plan.Engine, Approver: st.Authorization.Approver,
		Approvals: append([]string{}, st.Authorization.Approvals...), Verdicts: []PCRVerdict{}, Confidence: st.Confidence,
		Operation: st.Authorization.Operation, Approvers: st.Authorization.Approvers,
	}
	for _, p := range st.PCRs {
		pred.Verdicts = append(pred.Verdicts, PCRVerdict{Engine: p.Engine, RuleID: p.RuleID, Severity: p.Severity, Result: p.Result})
	}
	stmt := Statement{
		Type:          inTotoStatementType,
		Subject:       []StatementSubject{{Name: "tfplan", Digest: map[string]string{"sha256": sum}}},
		PredicateType: AttestationPredicateType,
		Predicate:     pred,
	}
	payload, err := Canonical(stmt)
	if err != nil {
		return AttestationRecord{}, Errorf(InternalError, "encoding the attestation: %w", err)
	}
	var certPEM []byte
	if c, ok := signer.(certifiedAttestor); ok {
		signer = attestorFunc(func(msg []byte) ([]byte, error) {
			sig, cert, err := c.SignCertified(msg)
			certPEM = cert
			return sig, err
		})
	}
	env, err := SignEnvelope(signer, inTotoPayloadType, payload)
	if err != nil {
		return AttestationRecord{}, err
	}
	return AttestationRecord{PredicateType: AttestationPredicateType, PlanFile: st.Plan.PlanFile, PlanSHA256: sum, Envelope: env, Certificate: string(certPEM)}, nil
}

// SignEnvelope signs payload into a DSSE envelope: the signature is over
// the pre-authentication encoding, so neither type nor payload can be
// swapped under it.
func SignEnvelope(signer Attestor, payloadType string, payload []byte) (Envelope, error) {
	sig, err := signer.Sign(PAE(payloadType, payload))
	if err != nil {
		return Envelope{}, Errorf(EvidenceKeyInvalid, "signing the attestation: %w", err)
	}
	return Envelope{
		PayloadType: payloadType,
		Payload:     base64.StdEncoding.EncodeToString(payload),
		Signatures:  []EnvelopeSignature{{Sig: string(sig)}},
	}, nil
}

// PAE is DSSE's pre-authentication encoding.
func PAE(payloadType string, payload []byte) []byte {
	out := []byte("DSSEv1 " + strconv.Itoa(len(payloadType)) + " " + payloadType + " " + strconv.Itoa(len(payload)) + " ")
	return append(out, payload...)
}

// DecodeStatement reads the statement an envelope carries.
func (e Envelope) DecodeStatement() (Statement, error) {
	var s Statement
	raw, err := base64.StdEncoding.DecodeString(e.Payload)
	if err != nil {
		return s, fmt.Errorf("decoding the envelope payload: %w", err)
	}
	return s, json.Unmarshal(raw, &s)
}

// HashFile is the hex sha256 of a saved plan file, read up to a bound.
func HashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, maxPlanFileBytes+1))
	if err != nil {
		return "", err
	}
	if n > maxPlanFileBytes {
		return "", fmt.Errorf("%s is larger than %d bytes", path, int64(maxPlanFileBytes))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
