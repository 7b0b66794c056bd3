// Package keyless signs Nova's evidence without a long-lived key: the job's
// OIDC token (GitHub Actions' id-token) is exchanged at Fulcio for a
// short-lived certificate over an ephemeral P-256 key, and every event
// signature carries that certificate. What a signature proves is then the
// workflow that made it (the certificate's identity), which signers.yml on
// the default branch names (Policy), not who held a secret.
package keyless

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	cbundle "github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	"github.com/sigstore/fulcio/pkg/api"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/oauthflow"
	"github.com/sigstore/sigstore/pkg/signature"
	"golang.org/x/oauth2"

	"github.com/nova-platform/nova/runner"
)

// DefaultFulcioURL is Sigstore's public Fulcio, which trusts GitHub
// Actions' token issuer.
const DefaultFulcioURL = "https://fulcio.sigstore.dev"

// Bundle is the .sig file of a keylessly signed event: cosign's blob
// bundle (what `cosign sign-blob --bundle` writes, so `cosign verify-blob
// --bundle` reads it as it is) with the issuing chain beside the
// certificate. A key-signed event's .sig stays the bare base64 signature;
// the leading '{' tells the two apart.
type Bundle struct {
	Base64Signature string `json:"base64Signature"`
	// Cert is the base64 of the leaf certificate's PEM, as cosign writes it.
	Cert string `json:"cert"`
	// CertChain is the base64 of the PEM chain Fulcio returned (its
	// intermediates and root). A verifier anchors trust in roots it is
	// configured with, never in this copy; it is kept so the evidence
	// shows the whole path it was issued on.
	CertChain string `json:"certChain,omitempty"`
	// RekorBundle is the entry Rekor logged for this signature (when the
	// signer uploads: Options.RekorURL), as cosign writes it: the entry's
	// body, log index and integrated time, with the log's signed entry
	// timestamp over them. `cosign verify-blob --bundle` checks it with
	// the log's key.
	RekorBundle *cbundle.RekorBundle `json:"rekorBundle,omitempty"`
	// RekorInclusionProof proves the entry is in the log, up to a
	// checkpoint the log signed; cosign's bundle has no field for it.
	RekorInclusionProof *InclusionProof `json:"rekorInclusionProof,omitempty"`
}

// IsBundle reports whether a .sig file's content is a keyless Bundle
// rather than a bare signature (base64 never starts with '{').
func IsBundle(sigFile []byte) bool {
	b := bytes.TrimSpace(sigFile)
	return len(b) > 0 && b[0] == '{'
}

// Options says where a Signer gets its certificate.
type Options struct {
	// FulcioURL is the CA (DefaultFulcioURL when empty).
	FulcioURL string
	// Token is the job's OIDC ID token (audience "sigstore").
	Token string
	// Now is the clock (time.Now when nil): a certificate is only used
	// inside its validity.
	Now func() time.Time
	// RekorURL, when set, is the transparency log every event signature
	// is uploaded to before it is recorded. Off by default: a private
	// forge's jobs often cannot reach a public log, and a public log
	// publishes the workflow's identity with every signature.
	RekorURL string
	// RekorPublicKey (PEM) checks the log's answers; when empty the key
	// the log serves is used.
	RekorPublicKey []byte
}

// Signer signs with an ephemeral key certified by Fulcio. The private key
// lives only in this process; once the certificate expires (ten minutes
// with Fulcio's defaults) the Signer refuses to sign.
type Signer struct {
	sv       signature.SignerVerifier
	cert     *x509.Certificate
	certPEM  []byte
	chainPEM []byte
	now      func() time.Time
	ctx      context.Context
	rekor    *rekorLog
}

// New makes the ephemeral key and obtains its certificate for opts.Token.
func New(ctx context.Context, opts Options) (*Signer, error) {
	if opts.Token == "" {
		return nil, runner.Errorf(runner.KeylessTokenMissing, "keyless signing needs the job's OIDC token (id-token: write on GitHub)")
	}
	if opts.FulcioURL == "" {
		opts.FulcioURL = DefaultFulcioURL
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the ephemeral key: %w", err)
	}
	sv, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("loading the ephemeral key: %w", err)
	}
	u, err := url.Parse(opts.FulcioURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, runner.Errorf(runner.ConfigInvalid, "fulcio URL %q is not a URL", opts.FulcioURL)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// What cosign's "token" flow does (cosign/v2 cli/fulcio.GetCert),
	// through the same sigstore and fulcio packages: the token's subject,
	// read without verification (Fulcio verifies the token), signed with
	// the key as proof of possession. cosign's CLI package itself is not
	// linked: it brings every KMS provider and doubled Nova's binary.
	idt, err := (&oauthflow.StaticTokenGetter{RawToken: opts.Token}).GetIDToken(nil, oauth2.Config{})
	if err != nil {
		return nil, runner.Errorf(runner.KeylessTokenMissing, "the OIDC token is not a JWT with a subject: %v", redact(err, opts.Token))
	}
	proof, err := sv.SignMessage(strings.NewReader(idt.Subject))
	if err != nil {
		return nil, fmt.Errorf("signing the proof of possession: %w", err)
	}
	pubPEM, err := cryptoutils.MarshalPublicKeyToPEM(&priv.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("encoding the ephemeral key: %w", err)
	}
	// Fulcio checks the token with its issuer and certifies the key for
	// the identity it names; the error says why it refused, never the
	// token.
	resp, err := api.NewClient(u, api.WithUserAgent("nova")).SigningCert(api.CertificateRequest{
		PublicKey: api.Key{Content: pubPEM}, SignedEmailAddress: proof,
	}, opts.Token)
	if err != nil {
		return nil, runner.Errorf(runner.KeylessCertificateRefused, "fulcio %s refused a certificate: %v", opts.FulcioURL, redact(err, opts.Token))
	}
	cert, err := cryptoutils.UnmarshalCertificatesFromPEM(resp.CertPEM)
	if err != nil || len(cert) != 1 {
		return nil, runner.Errorf(runner.KeylessCertificateRefused, "fulcio %s returned no certificate", opts.FulcioURL)
	}
	pub, ok := cert[0].PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(&priv.PublicKey) {
		return nil, runner.Errorf(runner.KeylessCertificateRefused, "fulcio %s certified another key than the one sent", opts.FulcioURL)
	}
	signer := &Signer{sv: sv, cert: cert[0], certPEM: resp.CertPEM, chainPEM: resp.ChainPEM, now: opts.Now, ctx: ctx}
	if opts.RekorURL != "" {
		// Without a configured key the log is asked for its own now: a
		// job that cannot reach it fails before it plans.
		if signer.rekor, err = openRekor(ctx, opts.RekorURL, opts.RekorPublicKey); err != nil {
			return nil, err
		}
	}
	return signer, nil
}

// redact keeps the token out of an error that might quote the request.
func redact(err error, token string) string {
	return string(bytes.ReplaceAll([]byte(err.Error()), []byte(token), []byte("[token]")))
}

// Certificate is the leaf certificate.
func (s *Signer) Certificate() *x509.Certificate { return s.cert }

// CertificatePEM is the leaf certificate followed by the chain Fulcio
// returned: what a verifier needs beside a signature (and what `cosign
// verify-blob-attestation --certificate` reads, leaf first).
func (s *Signer) CertificatePEM() []byte {
	return append(append([]byte{}, s.certPEM...), s.chainPEM...)
}

// usable refuses to sign outside the certificate's validity: a signature
// made after it expired would claim an identity no CA vouched for then.
func (s *Signer) usable() error {
	now := s.now()
	if now.After(s.cert.NotAfter) {
		return runner.Errorf(runner.KeylessCertificateExpired, "the signing certificate expired at %s (it is %s): obtain a new one", s.cert.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if now.Before(s.cert.NotBefore) {
		return runner.Errorf(runner.KeylessCertificateExpired, "the signing certificate is valid only from %s (it is %s)", s.cert.NotBefore.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}

// Sign returns base64 of the ASN.1 DER ECDSA signature over SHA-256 of
// msg, as the key-based signer does: for DSSE envelopes and claims, whose
// certificate travels beside them (CertificatePEM).
func (s *Signer) Sign(msg []byte) ([]byte, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	der, err := s.sv.SignMessage(bytes.NewReader(msg))
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(len(der)))
	base64.StdEncoding.Encode(out, der)
	return out, nil
}

// SignCertified is Sign, also returning the certificate (CertificatePEM)
// that verifies the signature.
func (s *Signer) SignCertified(msg []byte) ([]byte, []byte, error) {
	sig, err := s.Sign(msg)
	if err != nil {
		return nil, nil, err
	}
	return sig, s.CertificatePEM(), nil
}

// SigFile returns the .sig file content for an event: a Bundle, with
// the entry the transparency log recorded for the signature when the
// signer uploads. A signature the log did not take is an error, and no
// .sig: an event is recorded with its entry or not at all.
func (s *Signer) SigFile(msg []byte) ([]byte, error) {
	b, err := s.bundle(msg)
	if err != nil {
		return nil, err
	}
	if s.rekor != nil {
		der, err := base64.StdEncoding.DecodeString(b.Base64Signature)
		if err != nil {
			return nil, err
		}
		e, err := s.rekor.upload(s.ctx, msg, der, s.certPEM)
		if err != nil {
			return nil, err
		}
		if b, err = withEntry(b, e); err != nil {
			return nil, runner.Errorf(runner.RekorUploadFailed, "rekor %s: %v", s.rekor.url, err)
		}
	}
	return marshalBundle(b)
}

// LocalSigFile is SigFile without the upload: for a probe of the
// signer's identity, which is no event and has no place in a public log.
func (s *Signer) LocalSigFile(msg []byte) ([]byte, error) {
	b, err := s.bundle(msg)
	if err != nil {
		return nil, err
	}
	return marshalBundle(b)
}

func (s *Signer) bundle(msg []byte) (Bundle, error) {
	sig, err := s.Sign(msg)
	if err != nil {
		return Bundle{}, err
	}
	return Bundle{
		Base64Signature: string(sig),
		Cert:            base64.StdEncoding.EncodeToString(s.certPEM),
		CertChain:       base64.StdEncoding.EncodeToString(s.chainPEM),
	}, nil
}

func marshalBundle(b Bundle) ([]byte, error) {
	out, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encoding the signature bundle: %w", err)
	}
	return out, nil
}

// ParseBundle reads a keyless .sig file.
func ParseBundle(sigFile []byte) (Bundle, *x509.Certificate, []*x509.Certificate, []byte, error) {
	var b Bundle
	if err := json.Unmarshal(sigFile, &b); err != nil {
		return b, nil, nil, nil, fmt.Errorf("keyless signature is not a bundle: %w", err)
	}
	sig, err := base64.StdEncoding.DecodeString(b.Base64Signature)
	if err != nil || len(sig) == 0 {
		return b, nil, nil, nil, errors.New("keyless signature bundle has no base64 signature")
	}
	certPEM, err := base64.StdEncoding.DecodeString(b.Cert)
	if err != nil {
		return b, nil, nil, nil, errors.New("keyless signature bundle's cert is not base64")
	}
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM(certPEM)
	if err != nil || len(certs) != 1 {
		return b, nil, nil, nil, errors.New("keyless signature bundle does not hold one certificate")
	}
	var chain []*x509.Certificate
	if b.CertChain != "" {
		chainPEM, err := base64.StdEncoding.DecodeString(b.CertChain)
		if err != nil {
			return b, nil, nil, nil, errors.New("keyless signature bundle's chain is not base64")
		}
		if chain, err = cryptoutils.UnmarshalCertificatesFromPEM(chainPEM); err != nil {
			return b, nil, nil, nil, fmt.Errorf("keyless signature bundle's chain: %w", err)
		}
	}
	return b, certs[0], chain, sig, nil
}
