package signing

import (
	"crypto/rand"
	"crypto/sha512"
	"time"

	"filippo.io/edwards25519"
	"filippo.io/edwards25519/field"

	"github.com/nova-platform/nova/runner"
)

// Verify and a runner's first sync check one commit signature per event,
// thousands at a time, all by the same key or two; checked one by one,
// the Ed25519 checks were a quarter of a verify's CPU. Checked together,
// as a random linear combination of their equations (the batch
// verification of the Ed25519 paper, section 5), n signatures cost one
// multi-scalar multiplication with n half-length scalars instead of n
// double scalar multiplications: about a quarter of the CPU each
// (BenchmarkCheckCommits).
//
// A batch never rejects. When its equation fails, each of its signatures
// is checked alone as CheckCommit checks it, which decides and says why; so the
// verdicts are CheckCommit's, but for what the batch accepts: every
// signature that verifies alone makes the equation hold, and one that
// does not makes it hold with probability at most 2^-127 (the random
// weights are 128 bits with the top bit set) unless its error is a point
// of small order. Only the key's holder can make such a signature (R
// less that point must satisfy the equation, which takes the key), and
// the equation holds for it with probability at most 1/2; a forger
// without the key gains nothing. Everything else the single check
// requires is required here too: S below the group order, R encoded
// canonically, a key that is a point on the curve.

// batchSize bounds a batch: large enough that the 256 shared doublings
// cost little per signature, small enough that one bad signature sends
// few good ones to be checked again alone.
const batchSize = 64

// SignedCommit is what CheckCommit reads of a commit: the bytes its
// signature covers and its gpgsig header.
type SignedCommit struct {
	Signed    []byte
	Signature string
}

// CommitVerdict is CheckCommit's answer for one commit: Err is nil when
// the signature is good, else Reason says why not.
type CommitVerdict struct {
	Reason runner.Reason
	Err    error
}

// CheckCommits answers CheckCommit for each of commits, checking the
// Ed25519 signatures of readFast's shape in batches.
func (k *CommitKeyRing) CheckCommits(commits []SignedCommit) []CommitVerdict {
	out := make([]CommitVerdict, len(commits))
	sigs := make([]fastSignature, len(commits))
	alone := func(i int, ok bool) {
		out[i].Reason, out[i].Err = k.decide(commits[i].Signed, commits[i].Signature, sigs[i], ok)
	}
	keys, now := k.readyKeys(), time.Now()
	var batch []int
	flush := func() {
		if !verifyBatch(sigs, batch) {
			for _, i := range batch {
				alone(i, true)
			}
		}
		batch = batch[:0]
	}
	for i, c := range commits {
		f, ok := readFast(keys, c.Signed, c.Signature, now)
		sigs[i] = f
		// Two allowed keys with one key id would each fail the batches of
		// the other's signatures: such signatures are checked alone.
		if !ok || len(f.keys) != 1 || f.keys[0].point == nil {
			alone(i, ok)
			continue
		}
		if batch = append(batch, i); len(batch) == batchSize {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
	return out
}

// verifyBatch is checkBatch; tests count the batches.
var verifyBatch = checkBatch

// checkBatch reports whether the signatures sigs[i] for i in batch, each
// with one key, all verify. False is not a verdict on any one of them.
func checkBatch(sigs []fastSignature, batch []int) bool {
	if len(batch) == 1 {
		return sigs[batch[0]].verify()
	}
	weights := make([]byte, 16*len(batch))
	rand.Read(weights)
	// Σ z·R + Σ_A (Σ z·k)·A − (Σ z·S)·B = 0, from each R = S·B − k·A.
	scalars := make([]*edwards25519.Scalar, 0, len(batch)+2)
	points := make([]*edwards25519.Point, 0, len(batch)+2)
	perKey := map[*edwards25519.Point]*edwards25519.Scalar{}
	sumS := edwards25519.NewScalar()
	var wide [32]byte
	var hramDigest [sha512.Size]byte
	h := sha512.New()
	for j, i := range batch {
		f := &sigs[i]
		R, ok := canonicalPoint(f.rs[:32])
		if !ok {
			return false
		}
		S, err := edwards25519.NewScalar().SetCanonicalBytes(f.rs[32:])
		if err != nil {
			return false
		}
		key := f.keys[0]
		h.Reset()
		h.Write(f.rs[:32])
		h.Write(key.pub)
		h.Write(f.digest)
		k, err := edwards25519.NewScalar().SetUniformBytes(h.Sum(hramDigest[:0]))
		if err != nil {
			return false
		}
		copy(wide[:16], weights[16*j:])
		wide[15] |= 0x80
		z, err := edwards25519.NewScalar().SetCanonicalBytes(wide[:])
		if err != nil {
			return false
		}
		sumS.MultiplyAdd(z, S, sumS)
		zk, seen := perKey[key.point]
		if !seen {
			zk = edwards25519.NewScalar()
			perKey[key.point] = zk
		}
		zk.MultiplyAdd(z, k, zk)
		scalars, points = append(scalars, z), append(points, R)
	}
	for A, zk := range perKey {
		scalars, points = append(scalars, zk), append(points, A)
	}
	scalars = append(scalars, edwards25519.NewScalar().Negate(sumS))
	points = append(points, edwards25519.NewGeneratorPoint())
	sum := new(edwards25519.Point).VarTimeMultiScalarMult(scalars, points)
	return sum.Equal(edwards25519.NewIdentityPoint()) == 1
}

// canonicalPoint decodes b when it is a point's canonical encoding, the
// only R the single check accepts (it compares b with the encoding of the
// point it computes). edwards25519 also decodes a y of 2^255−19 or more,
// and an x of zero with the sign bit set.
func canonicalPoint(b []byte) (*edwards25519.Point, bool) {
	y, err := new(field.Element).SetBytes(b)
	if err != nil {
		return nil, false
	}
	enc := y.Bytes()
	sign := b[31] >> 7
	if enc[31]|sign<<7 != b[31] || string(enc[:31]) != string(b[:31]) {
		return nil, false
	}
	// x is zero only where y² = 1.
	if sign == 1 && (y.Equal(feOne) == 1 || y.Equal(feMinusOne) == 1) {
		return nil, false
	}
	p, err := new(edwards25519.Point).SetBytes(b)
	return p, err == nil
}

var (
	feOne      = new(field.Element).One()
	feMinusOne = new(field.Element).Negate(feOne)
)
