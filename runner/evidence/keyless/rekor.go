package keyless

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	cbundle "github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	rekorclient "github.com/sigstore/rekor/pkg/client"
	rekorgen "github.com/sigstore/rekor/pkg/generated/client"
	"github.com/sigstore/rekor/pkg/generated/client/pubkey"
	"github.com/sigstore/rekor/pkg/generated/models"
	rekorverify "github.com/sigstore/rekor/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/tuf"

	"github.com/nova-platform/nova/runner"
)

// rekorTimeout bounds one upload (with the client's retries): an event is
// signed while the store holds its lock, and a log that does not answer
// must fail the run with a reason, not hang it.
const rekorTimeout = 30 * time.Second

// rekorLog is where a Signer records its signatures: Rekor's API and the
// key that signs its checkpoints and entry timestamps.
type rekorLog struct {
	url      string
	client   *rekorgen.Rekor
	verifier signature.Verifier
}

// openRekor connects to the log at rawURL. The key that checks its answers
// is pubPEM when given (the one verifiers trust, so a log that signs with
// another is refused before anything is recorded), else the one the log
// serves: enough to refuse a malformed or inconsistent answer, while trust
// is the verifier's, with its own copy of the key.
func openRekor(ctx context.Context, rawURL string, pubPEM []byte) (*rekorLog, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, runner.Errorf(runner.ConfigInvalid, "rekor URL %q is not a URL", rawURL)
	}
	c, err := rekorclient.GetRekorClient(rawURL, rekorclient.WithUserAgent("nova"), rekorclient.WithRetryCount(2))
	if err != nil {
		return nil, runner.Errorf(runner.RekorUploadFailed, "rekor %s: %v", rawURL, err)
	}
	if len(pubPEM) == 0 {
		ctx, cancel := context.WithTimeout(ctx, rekorTimeout)
		defer cancel()
		ok, err := c.Pubkey.GetPublicKey(pubkey.NewGetPublicKeyParamsWithContext(ctx))
		if err != nil {
			return nil, runner.Errorf(runner.RekorUploadFailed, "rekor %s is not reachable (reading its public key): %v", rawURL, err)
		}
		pubPEM = []byte(ok.Payload)
	}
	v, err := RekorVerifier(pubPEM)
	if err != nil {
		return nil, err
	}
	return &rekorLog{url: rawURL, client: c, verifier: v}, nil
}

// RekorVerifier loads a Rekor public key (PEM) for checking its
// checkpoints and signed entry timestamps.
func RekorVerifier(pubPEM []byte) (signature.Verifier, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pubPEM)
	if err != nil {
		return nil, runner.Errorf(runner.ConfigInvalid, "the Rekor public key is not a PEM public key: %v", err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, runner.Errorf(runner.ConfigInvalid, "the Rekor public key: %v", err)
	}
	return v, nil
}

// upload records a signature over msg (der, by the key of certPEM) as a
// hashedrekord entry, as `cosign sign-blob` does, and checks the answer:
// its inclusion proof up to a checkpoint the log signed, its signed entry
// timestamp, and that it holds this signature, certificate and digest.
func (r *rekorLog) upload(ctx context.Context, msg, der, certPEM []byte) (*models.LogEntryAnon, error) {
	ctx, cancel := context.WithTimeout(ctx, rekorTimeout)
	defer cancel()
	h := sha256.New()
	h.Write(msg)
	e, err := cosign.TLogUpload(ctx, r.client, der, h, certPEM)
	if err != nil {
		return nil, runner.Errorf(runner.RekorUploadFailed, "uploading the signature to rekor %s: %v", r.url, err)
	}
	if err := checkEntry(ctx, e, r.verifier, msg, base64.StdEncoding.EncodeToString(der), certPEM); err != nil {
		return nil, runner.Errorf(runner.RekorUploadFailed, "rekor %s answered with an entry that does not verify: %v", r.url, err)
	}
	return e, nil
}

// InclusionProof is the proof Rekor returned that an entry is in its log,
// kept beside cosign's bundle (which holds only the signed entry
// timestamp, a promise to include it): the path to a root hash the log
// signed in Checkpoint.
type InclusionProof struct {
	LogIndex   int64    `json:"logIndex"`
	TreeSize   int64    `json:"treeSize"`
	RootHash   string   `json:"rootHash"`
	Hashes     []string `json:"hashes"`
	Checkpoint string   `json:"checkpoint"`
}

// withEntry puts e in b: the bundle cosign reads and the inclusion proof.
func withEntry(b Bundle, e *models.LogEntryAnon) (Bundle, error) {
	rb := cbundle.EntryToBundle(e)
	if rb == nil || e.Verification.InclusionProof == nil {
		return b, errors.New("rekor returned no signed entry timestamp and inclusion proof")
	}
	p := e.Verification.InclusionProof
	b.RekorBundle = rb
	b.RekorInclusionProof = &InclusionProof{LogIndex: *p.LogIndex, TreeSize: *p.TreeSize, RootHash: *p.RootHash, Hashes: p.Hashes, Checkpoint: *p.Checkpoint}
	return b, nil
}

// logEntry rebuilds, from a bundle, the entry Rekor returned.
func (b Bundle) logEntry() (*models.LogEntryAnon, error) {
	rb, p := b.RekorBundle, b.RekorInclusionProof
	if rb == nil || p == nil {
		return nil, errors.New("the bundle holds no Rekor entry with an inclusion proof")
	}
	body, ok := rb.Payload.Body.(string)
	if !ok {
		return nil, errors.New("the Rekor entry's body is not base64")
	}
	e := &models.LogEntryAnon{
		Body:           body,
		IntegratedTime: &rb.Payload.IntegratedTime,
		LogIndex:       &rb.Payload.LogIndex,
		LogID:          &rb.Payload.LogID,
		Verification: &models.LogEntryAnonVerification{
			SignedEntryTimestamp: strfmt.Base64(rb.SignedEntryTimestamp),
			InclusionProof: &models.InclusionProof{
				LogIndex: &p.LogIndex, TreeSize: &p.TreeSize, RootHash: &p.RootHash, Hashes: p.Hashes, Checkpoint: &p.Checkpoint,
			},
		},
	}
	// Rekor's checks dereference these fields: a bundle missing one is
	// refused here, not by a panic there.
	if err := e.Verification.InclusionProof.Validate(strfmt.Default); err != nil {
		return nil, fmt.Errorf("the inclusion proof: %w", err)
	}
	for _, h := range append([]string{p.RootHash}, p.Hashes...) {
		if _, err := hex.DecodeString(h); err != nil {
			return nil, errors.New("the inclusion proof holds a hash that is not hex")
		}
	}
	return e, nil
}

// checkEntry verifies e with the log's key (inclusion proof up to a
// signed checkpoint, signed entry timestamp) and that it records the
// signature b64sig over msg by the key of certPEM (cosign's own check of a
// bundle against the signature it accompanies).
func checkEntry(ctx context.Context, e *models.LogEntryAnon, v signature.Verifier, msg []byte, b64sig string, certPEM []byte) error {
	if e == nil || e.Verification == nil || e.Verification.InclusionProof == nil || e.IntegratedTime == nil || e.LogIndex == nil || e.LogID == nil {
		return errors.New("the entry has no inclusion proof or signed entry timestamp")
	}
	if err := e.Verification.InclusionProof.Validate(strfmt.Default); err != nil {
		return fmt.Errorf("the inclusion proof: %w", err)
	}
	if _, ok := e.Body.(string); !ok {
		return errors.New("the entry's body is not base64")
	}
	if err := rekorverify.VerifyLogEntry(ctx, e, v); err != nil {
		return err
	}
	pub, err := v.PublicKey()
	if err != nil {
		return err
	}
	keys := cosign.NewTrustedTransparencyLogPubKeys()
	pubPEM, err := cryptoutils.MarshalPublicKeyToPEM(pub)
	if err != nil {
		return err
	}
	if err := keys.AddTransparencyLogPubKey(pubPEM, tuf.Active); err != nil {
		return err
	}
	sig, err := static.NewSignature(msg, b64sig, static.WithCertChain(certPEM, nil), static.WithBundle(cbundle.EntryToBundle(e)))
	if err != nil {
		return err
	}
	if _, err := cosign.VerifyBundle(sig, &cosign.CheckOpts{RekorPubKeys: &keys}); err != nil {
		return err
	}
	return nil
}

// verifyLogged checks the Rekor entry of a bundle with the log's key v,
// and that the log saw the signature while its certificate was valid.
func verifyLogged(b Bundle, v signature.Verifier, msg, certPEM []byte, certNotBefore, certNotAfter time.Time) error {
	e, err := b.logEntry()
	if err != nil {
		return err
	}
	if err := checkEntry(context.Background(), e, v, msg, b.Base64Signature, certPEM); err != nil {
		return fmt.Errorf("the Rekor entry does not verify: %w", err)
	}
	at := time.Unix(*e.IntegratedTime, 0)
	if at.Before(certNotBefore) || at.After(certNotAfter) {
		return fmt.Errorf("rekor logged the signature at %s, outside its certificate's validity (%s to %s)",
			at.UTC().Format(time.RFC3339), certNotBefore.UTC().Format(time.RFC3339), certNotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}
