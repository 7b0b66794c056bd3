package keyless

import (
	"context"
	"sync"
	"time"
)

// renewBefore is how long before its certificate expires a Renewing
// signer obtains the next: a signature must never straddle the expiry.
const renewBefore = 30 * time.Second

// TokenFunc returns a current OIDC token: GitHub hands a job a new one on
// each request, so a run longer than a certificate's ten minutes renews.
type TokenFunc func(ctx context.Context) (string, error)

// Renewing is a Signer that obtains a new certificate (a new ephemeral
// key, for a new token) when the current one is about to expire, so an
// apply that outlasts one certificate still signs its outcome.
type Renewing struct {
	ctx   context.Context
	opts  Options
	token TokenFunc

	mu  sync.Mutex
	cur *Signer
}

// NewRenewing obtains the first certificate now: a job that cannot get
// one fails before it plans, not after it applied.
func NewRenewing(ctx context.Context, opts Options, token TokenFunc) (*Renewing, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Renewing{ctx: context.WithoutCancel(ctx), opts: opts, token: token}
	if _, err := r.current(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Renewing) current() (*Signer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil && r.opts.Now().Add(renewBefore).Before(r.cur.cert.NotAfter) {
		return r.cur, nil
	}
	tok, err := r.token(r.ctx)
	if err != nil {
		return nil, err
	}
	opts := r.opts
	opts.Token = tok
	s, err := New(r.ctx, opts)
	if err != nil {
		return nil, err
	}
	r.cur = s
	return s, nil
}

// Sign is Signer.Sign with a current certificate.
func (r *Renewing) Sign(msg []byte) ([]byte, error) {
	s, err := r.current()
	if err != nil {
		return nil, err
	}
	return s.Sign(msg)
}

// SigFile is Signer.SigFile with a current certificate.
func (r *Renewing) SigFile(msg []byte) ([]byte, error) {
	s, err := r.current()
	if err != nil {
		return nil, err
	}
	return s.SigFile(msg)
}

// LocalSigFile is Signer.LocalSigFile with a current certificate.
func (r *Renewing) LocalSigFile(msg []byte) ([]byte, error) {
	s, err := r.current()
	if err != nil {
		return nil, err
	}
	return s.LocalSigFile(msg)
}

// SignCertified signs msg and returns the certificate that signed it.
func (r *Renewing) SignCertified(msg []byte) ([]byte, []byte, error) {
	s, err := r.current()
	if err != nil {
		return nil, nil, err
	}
	return s.SignCertified(msg)
}

// CertificatePEM is the current certificate and its chain.
func (r *Renewing) CertificatePEM() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur.CertificatePEM()
}
