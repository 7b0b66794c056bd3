package keyless

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/fulcio/pkg/certificate"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"go.yaml.in/yaml/v3"

	"github.com/nova-platform/nova/runner"
)

// SignersFile names the workflows whose keyless signatures count. Like
// approvers.yml it is read from the trusted base (the default branch),
// never from the change under review: a pull request that adds its own
// workflow here must not make that workflow's signatures count.
const SignersFile = ".nova/signers.yml"

// MaxSignersBytes bounds signers.yml: a list of workflows.
const MaxSignersBytes = 64 << 10

// ReadTrustedSigners reads signers.yml at path (from the repository's
// root) from the forge's trusted base, as runner.ForgeApprovers reads the
// approver config: through the forge's API, at the commit the forge says
// the trusted branch is at. A job's checkout is not read at all: whoever
// edits the workflow decides what its checkout steps fetch, so a copy
// there could name any identity. Identities without a ref get the trusted
// branch's. Missing, unreadable or invalid, it is SIGNERS_CONFIG_INVALID.
func ReadTrustedSigners(ctx context.Context, base runner.TrustedBase, path string) (*Signers, error) {
	data, where, err := base.TrustedFile(ctx, path)
	if err != nil {
		return nil, runner.Errorf(runner.SignersConfigInvalid, "reading %s from the trusted base: %w", path, err)
	}
	if len(data) > MaxSignersBytes {
		return nil, runner.Errorf(runner.SignersConfigInvalid, "%s at %s is larger than %d bytes", path, where, MaxSignersBytes)
	}
	defaultRef := ""
	if where.Branch != "" {
		defaultRef = "refs/heads/" + where.Branch
	}
	s, err := ParseSigners(data, defaultRef)
	if err != nil {
		return nil, fmt.Errorf("%s (read from %s): %w", path, where, err)
	}
	return s, nil
}

// GitHubIssuer is GitHub Actions' OIDC token issuer.
const GitHubIssuer = "https://token.actions.githubusercontent.com"

// Identity is one workflow whose signatures count: the token issuer, the
// repository it ran in, the workflow file and the ref it ran from. Fulcio
// (type github-workflow) writes https://github.com/<job_workflow_ref> as
// the certificate's identity (the Build Signer URI) and
// https://github.com/<workflow_ref>, the workflow the run started from, as
// its Build Config URI; a pull request's run of an edited copy of the
// workflow (…@refs/pull/7/merge) is another identity in both.
type Identity struct {
	Issuer     string `yaml:"issuer"`
	Repository string `yaml:"repository"`
	// Workflow is the file's path in the repository:
	// .github/workflows/nova.yml.
	Workflow string `yaml:"workflow"`
	// Ref defaults to the default branch's (refs/heads/<default>).
	Ref string `yaml:"ref,omitempty"`
	// ReusableWorkflow, when set, is the reusable workflow that signs on
	// behalf of Workflow, which calls it (owner/repo/.github/workflows/
	// file.yml@ref, the job_workflow_ref GitHub gives its jobs): the
	// certificate's identity is then it, and its Build Config URI must be
	// Workflow at Ref. Unset, the workflow signs itself and both are it.
	ReusableWorkflow string `yaml:"reusableWorkflow,omitempty"`
}

// Subject is the certificate identity (SAN URI) Fulcio gives a run of i:
// what `cosign verify-blob --certificate-identity` takes.
func (i Identity) Subject() string {
	if i.ReusableWorkflow != "" {
		return "https://github.com/" + i.ReusableWorkflow
	}
	return i.BuildConfig()
}

// BuildConfig is the Build Config URI Fulcio gives a run of i: the
// workflow the run started from.
func (i Identity) BuildConfig() string {
	return "https://github.com/" + i.Repository + "/" + i.Workflow + "@" + i.Ref
}

func (i Identity) String() string {
	if i.ReusableWorkflow != "" {
		return i.Subject() + " called by " + i.BuildConfig() + " (" + i.Issuer + ")"
	}
	return i.Subject() + " (" + i.Issuer + ")"
}

// Signers is .nova/signers.yml.
type Signers struct {
	Signers []Identity `yaml:"signers"`
}

var (
	repoName     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+$`) })
	workflowPath = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\.github/workflows/[A-Za-z0-9._-]+\.ya?ml$`)
	})
	// A reusable workflow is called by a branch, a tag or a commit.
	reusableRef = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+/\.github/workflows/[A-Za-z0-9._-]+\.ya?ml@(refs/(heads|tags)/[A-Za-z0-9._/-]+|[0-9a-f]{40})$`)
	})
)

// ParseSigners reads signers.yml strictly (unknown fields, a missing
// issuer, repository or workflow are errors: an ignored line would change
// whose signatures authorize production). defaultRef (refs/heads/main)
// fills each identity's ref left out; only branch and tag refs are
// accepted, since a pull request's ref is what the file exists to exclude.
func ParseSigners(data []byte, defaultRef string) (*Signers, error) {
	var s Signers
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, runner.Errorf(runner.SignersConfigInvalid, "%s: %s", SignersFile, strings.Join(te.Errors, "; "))
		}
		return nil, runner.Errorf(runner.SignersConfigInvalid, "%s: %w", SignersFile, err)
	}
	if len(s.Signers) == 0 {
		return nil, runner.Errorf(runner.SignersConfigInvalid, "%s names no signer", SignersFile)
	}
	for n := range s.Signers {
		id := &s.Signers[n]
		if id.Ref == "" {
			id.Ref = defaultRef
		}
		if err := id.check(); err != nil {
			return nil, runner.Errorf(runner.SignersConfigInvalid, "%s: signer %d: %w", SignersFile, n+1, err)
		}
	}
	return &s, nil
}

func (i Identity) check() error {
	if u, err := url.Parse(i.Issuer); err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("issuer %q is not a URL", i.Issuer)
	}
	if !repoName().MatchString(i.Repository) {
		return fmt.Errorf("repository %q is not owner/name", i.Repository)
	}
	if !workflowPath().MatchString(i.Workflow) {
		return fmt.Errorf("workflow %q is not a file under .github/workflows/", i.Workflow)
	}
	if i.Ref == "" {
		return errors.New("no ref, and the default branch is unknown")
	}
	if !strings.HasPrefix(i.Ref, "refs/heads/") && !strings.HasPrefix(i.Ref, "refs/tags/") {
		return fmt.Errorf("ref %q is not a branch or tag (refs/heads/…, refs/tags/…)", i.Ref)
	}
	if i.ReusableWorkflow != "" && !reusableRef().MatchString(i.ReusableWorkflow) {
		return fmt.Errorf("reusableWorkflow %q is not owner/repo/.github/workflows/<file>@<branch ref, tag ref or commit>", i.ReusableWorkflow)
	}
	return nil
}

// Policy verifies keyless signatures: the certificate chains to one of
// Roots (Fulcio's CA, configured, never taken from the evidence) and its
// identity is one of Identities.
type Policy struct {
	identities    []Identity
	roots         *x509.CertPool
	rootsRaw      [][]byte
	intermediates []*x509.Certificate
	fingerprint   string
	// rekor checks the transparency log entries keyless bundles carry
	// (nil: entries are not checked); requireLog refuses a bundle
	// without one.
	rekor      signature.Verifier
	requireLog bool
	// checked remembers each certificate's verdict: one job's certificate
	// signs all of its events, so a chain of thousands holds a few.
	checked sync.Map // sha256 of cert.Raw -> certVerdict
}

type certVerdict struct {
	who string
	err error
}

// NewPolicy trusts the certificates of rootsPEM (Fulcio's root, and any
// intermediates) for the identities of s.
func NewPolicy(s *Signers, rootsPEM []byte) (*Policy, error) {
	if s == nil || len(s.Signers) == 0 {
		return nil, runner.Errorf(runner.SignersConfigInvalid, "no signer identities to verify keyless signatures against")
	}
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM(rootsPEM)
	if err != nil || len(certs) == 0 {
		return nil, runner.Errorf(runner.SignersConfigInvalid, "the Fulcio root is not PEM certificates: %v", err)
	}
	p := &Policy{identities: slices.Clone(s.Signers), roots: x509.NewCertPool()}
	for _, c := range certs {
		if bytes.Equal(c.RawIssuer, c.RawSubject) {
			p.roots.AddCert(c)
			p.rootsRaw = append(p.rootsRaw, c.Raw)
		} else {
			p.intermediates = append(p.intermediates, c)
		}
	}
	if len(p.rootsRaw) == 0 {
		return nil, runner.Errorf(runner.SignersConfigInvalid, "the Fulcio root file holds no self-signed root certificate")
	}
	parts := []string{}
	for _, r := range p.rootsRaw {
		sum := sha256.Sum256(r)
		parts = append(parts, "root "+hex.EncodeToString(sum[:]))
	}
	for _, id := range p.identities {
		parts = append(parts, "id "+id.String())
	}
	slices.Sort(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	p.fingerprint = "keyless:" + hex.EncodeToString(sum[:])
	return p, nil
}

// WithRekor returns a copy of p that checks, with the Rekor public key
// pubPEM, the log entry of every keyless signature that carries one, and
// when require is set refuses a signature without one. Its fingerprint
// changes, so evidence verified without the log is verified again.
func (p *Policy) WithRekor(pubPEM []byte, require bool) (*Policy, error) {
	v, err := RekorVerifier(pubPEM)
	if err != nil {
		return nil, err
	}
	c := &Policy{identities: p.identities, roots: p.roots, rootsRaw: p.rootsRaw, intermediates: p.intermediates, rekor: v, requireLog: require}
	sum := sha256.Sum256(pubPEM)
	c.fingerprint = p.fingerprint + "+rekor:" + hex.EncodeToString(sum[:]) + "+required:" + strconv.FormatBool(require)
	return c, nil
}

// Identities are the identities p accepts.
func (p *Policy) Identities() []Identity { return slices.Clone(p.identities) }

// Fingerprint names the roots and identities, whatever their order, so
// what was verified under one policy is verified again under another.
func (p *Policy) Fingerprint() string { return p.fingerprint }

// VerifyKeyless checks a keyless .sig (a Bundle) over msg and returns the
// certificate's identity. The signature must verify with the certified
// key, the certificate chain to a trusted root (checked at its own
// issuance, as cosign does without a transparency log), and its identity
// match one of the policy's.
//
// With a Rekor key (WithRekor), a bundle's log entry is checked too: the
// log's inclusion proof and signed entry timestamp, that it records this
// signature, certificate and digest, and that it was logged while the
// certificate was valid.
func (p *Policy) VerifyKeyless(msg, sigFile []byte) (string, error) {
	who, err := p.VerifyKeylessIdentity(msg, sigFile)
	if err != nil || p.rekor == nil {
		return who, err
	}
	b, cert, _, _, err := ParseBundle(sigFile)
	if err != nil {
		return "", err
	}
	if b.RekorBundle == nil && b.RekorInclusionProof == nil {
		if p.requireLog {
			return "", runner.Errorf(runner.RekorEntryInvalid, "%s: the signature has no Rekor entry, and one is required", who)
		}
		return who, nil
	}
	certPEM, err := base64.StdEncoding.DecodeString(b.Cert)
	if err != nil {
		return "", err
	}
	if err := verifyLogged(b, p.rekor, msg, certPEM, cert.NotBefore, cert.NotAfter); err != nil {
		return "", runner.Errorf(runner.RekorEntryInvalid, "%s: %w", who, err)
	}
	// Not the entry's index: verify counts signatures per identity, and
	// the index is in the bundle.
	return who + ", logged in Rekor", nil
}

// VerifyKeylessIdentity is VerifyKeyless without the log: the signature,
// its certificate's chain and identity. For a signer's probe of its own
// identity, which is never uploaded.
func (p *Policy) VerifyKeylessIdentity(msg, sigFile []byte) (string, error) {
	_, cert, chain, sig, err := ParseBundle(sigFile)
	if err != nil {
		return "", err
	}
	v, err := signature.LoadVerifier(cert.PublicKey, crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("keyless certificate key: %w", err)
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(msg)); err != nil {
		return "", errors.New("keyless signature does not verify with its certificate's key")
	}
	key := sha256.Sum256(cert.Raw)
	if cv, ok := p.checked.Load(key); ok {
		return cv.(certVerdict).who, cv.(certVerdict).err
	}
	who, err := p.checkCert(cert, chain)
	p.checked.Store(key, certVerdict{who, err})
	return who, err
}

// CertIdentity is what a Fulcio certificate says about the run that
// obtained it.
type CertIdentity struct {
	// Subject is the SAN URI: https://github.com/<job_workflow_ref>.
	Subject string
	Issuer  string
	// SourceRepositoryURI and SourceRepositoryRef are where the run was.
	SourceRepositoryURI string
	SourceRepositoryRef string
	// BuildConfigURI is the workflow the run started from: the caller,
	// when Subject is a reusable workflow.
	BuildConfigURI string
}

func (c CertIdentity) String() string {
	if c.BuildConfigURI != "" && c.BuildConfigURI != c.Subject {
		return c.Subject + " called by " + c.BuildConfigURI + " (" + c.Issuer + ")"
	}
	return c.Subject + " (" + c.Issuer + ")"
}

// ReadIdentity reads a Fulcio certificate's identity without judging it.
func ReadIdentity(cert *x509.Certificate) (CertIdentity, error) {
	ext, err := certificate.ParseExtensions(cert.Extensions)
	if err != nil {
		return CertIdentity{}, fmt.Errorf("reading the certificate's Fulcio extensions: %w", err)
	}
	sans := cryptoutils.GetSubjectAlternateNames(cert)
	if len(sans) != 1 {
		return CertIdentity{}, fmt.Errorf("certificate names %d identities, want one", len(sans))
	}
	return CertIdentity{Subject: sans[0], Issuer: ext.Issuer, SourceRepositoryURI: ext.SourceRepositoryURI, SourceRepositoryRef: ext.SourceRepositoryRef, BuildConfigURI: ext.BuildConfigURI}, nil
}

func (p *Policy) checkCert(cert *x509.Certificate, chain []*x509.Certificate) (string, error) {
	got, err := ReadIdentity(cert)
	if err != nil {
		return "", runner.Errorf(runner.SignerIdentityUntrusted, "%w", err)
	}
	inter := x509.NewCertPool()
	for _, c := range append(slices.Clone(p.intermediates), chain...) {
		// The bundle's chain may hold the root too; only its
		// intermediates help, and a self-signed one there is no anchor.
		if !bytes.Equal(c.RawIssuer, c.RawSubject) {
			inter.AddCert(c)
		}
	}
	var lastErr error
	for _, id := range p.identities {
		co := &cosign.CheckOpts{
			RootCerts:         p.roots,
			IntermediateCerts: inter,
			Identities:        []cosign.Identity{{Issuer: id.Issuer, Subject: id.Subject()}},
			// No CT log is required: private forges cannot reach one,
			// and the policy pins the CA and the identity.
			IgnoreSCT: true,
		}
		if _, err := cosign.ValidateAndUnpackCert(cert, co); err != nil {
			lastErr = err
			continue
		}
		// The SAN names the workflow file, which may be a reusable one
		// called from another repository: the run must also have been in
		// this repository, for this ref.
		if got.SourceRepositoryURI != "https://github.com/"+id.Repository || got.SourceRepositoryRef != id.Ref {
			lastErr = fmt.Errorf("ran in %s at %s", got.SourceRepositoryURI, got.SourceRepositoryRef)
			continue
		}
		// The run must have started from the workflow named: for a
		// reusable signer its caller, else the workflow itself, which
		// another workflow calling it as a reusable one is not.
		if got.BuildConfigURI != id.BuildConfig() {
			lastErr = fmt.Errorf("started from %q", got.BuildConfigURI)
			continue
		}
		return "keyless " + got.String(), nil
	}
	return "", runner.Errorf(runner.SignerIdentityUntrusted, "keyless signature by %s is not from a workflow %s names, under a trusted Fulcio root (%v)", got, SignersFile, lastErr)
}
