package keyless_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/nova-platform/nova/runner/evidence/keyless"
	"github.com/nova-platform/nova/runner/evidence/keyless/keylesstest"
)

// BenchmarkKeylessSigFile is the cost per event of the transparency log:
// an event's .sig signed with a Fulcio certificate alone (local), and
// signed, uploaded to a Rekor on loopback (Trillian over PostgreSQL, its
// signer sequencing every 50 ms) and its answer checked (rekor).
func BenchmarkKeylessSigFile(b *testing.B) {
	iss := keylesstest.NewIssuer(b)
	f := keylesstest.StartFulcio(b, iss)
	r := keylesstest.StartRekor(b)
	s, err := keyless.New(context.Background(), keyless.Options{FulcioURL: f.URL, Token: iss.Token(b, trusted), RekorURL: r.URL, RekorPublicKey: r.PublicKeyPEM})
	if err != nil {
		b.Fatal(err)
	}
	for name, sign := range map[string]func([]byte) ([]byte, error){"local": s.LocalSigFile, "rekor": s.SigFile} {
		b.Run(name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				n++
				// Distinct events: Rekor refuses a second identical entry.
				if _, err := sign([]byte(`{"bench":"` + name + `","seq":` + strconv.Itoa(n) + `}`)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
