package evidence

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// fixtureRoot holds benchmark fixtures shared by every b.N round of one
// test binary; TestMain removes it.
var fixtureRoot string

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureRoot != "" {
		os.RemoveAll(fixtureRoot)
	}
	os.Exit(code)
}

// BenchmarkEvidenceAppend measures signed events committed to a local bare
// repo per second, through Record and Flush: outbox append + fsync, sign,
// commit, OpenPGP-sign, push, witness, outbox mark. "in-place" is how
// local mode writes its repo; "file-transport" goes through a clone and
// git-receive-pack, as a remote would (minus the network). Those push each
// event on its own (goal ≥ 100/s); "batch-10" pushes each contract's
// events ten at a time, as a run does (one object sync, one ref update,
// one witness append per batch; goal ≥ 1 000/s).
func BenchmarkEvidenceAppend(b *testing.B) {
	for _, bb := range []struct {
		name      string
		transport bool
		batch     int
	}{
		{"in-place", false, 1},
		{"file-transport", true, 1},
		{"batch-10", false, 10},
		{"batch-10-file-transport", true, 10},
	} {
		b.Run(bb.name, func(b *testing.B) {
			repo := newBareRepo(b)
			if bb.transport {
				repo = "file://" + repo
			}
			benchmarkAppend(b, repo, bb.batch)
		})
	}
}

// benchmarkAppend records b.N events over ten contracts, batch events of
// one contract at a time, and flushes each batch.
func benchmarkAppend(b *testing.B, repo string, batch int) {
	s := openStore(b, repo, newKeys(b))
	ctx := context.Background()
	data, _ := json.Marshal(map[string]string{"stage": "plan", "verdict": "pass"})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		contract := fmt.Sprintf("c-%02d", (i/batch)%10)
		e := runner.Event{
			SpecVersion: "1.0", ID: fmt.Sprintf("bench-%d", i), Source: "urn:nova:bench", Type: "nova.plan.created",
			Time: time.Now().UTC(), DataContentType: "application/json", RunID: "run", ContractID: contract,
			Environment: "dev", Data: data,
		}
		if err := s.Record(ctx, e); err != nil {
			b.Fatal(err)
		}
		if (i+1)%batch == 0 {
			if err := s.Flush(ctx, contract); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Drain(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkEvidenceVerify measures events verified per second on a 10 000
// event repo (100 contracts × 100 events, packed as a clone would be): every
// commit signature and content, every event signature, every chain.
// The fixture is built once per test binary.
//
// Each round also times the signature floor on the same machine, right
// after the verify it is compared with: the bare cryptography of one event
// (sha256 + ECDSA P-256 of the event, sha256 + Ed25519 of its commit), on
// as many workers as verify uses. "of-floor" is verify's rate over the
// floor's; goal ≥ 0.8 (issue 13). Both sides in one round, so load hits
// both.
func BenchmarkEvidenceVerify(b *testing.B) {
	const contracts, perContract = 100, 100
	repo, keys := verifyFixture(b, contracts, perContract)
	opts := verifyOptions(b, keys)
	floor := newSignatureFloor(b)
	var verifying, floored time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		rep := verifyRepo(b, repo, opts)
		if !rep.OK() || rep.Events != contracts*perContract {
			b.Fatalf("fixture does not verify: %d events%s", rep.Events, dumpFindings(rep))
		}
		verifying += time.Since(start)
		start = time.Now()
		floor.run(b, contracts*perContract)
		floored += time.Since(start)
	}
	events := float64(b.N * contracts * perContract)
	verifyRate, floorRate := events/verifying.Seconds(), events/floored.Seconds()
	b.ReportMetric(verifyRate, "events/s")
	b.ReportMetric(floorRate, "floor-events/s")
	b.ReportMetric(verifyRate/floorRate, "of-floor")
}

// signatureFloor is the cryptography verify cannot avoid per event: an
// ECDSA P-256 signature over the event file's sha256 and an Ed25519
// signature over its commit's hash (what OpenPGP's EdDSA signs), on inputs
// the size of the fixture's.
type signatureFloor struct {
	ecKey  *ecdsa.PublicKey
	edKey  ed25519.PublicKey
	events [][]byte // event file bodies
	ecSigs [][]byte
	// commits are commit payloads, edSigs their signatures.
	commits [][]byte
	edSigs  [][]byte
}

func newSignatureFloor(b *testing.B) *signatureFloor {
	b.Helper()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	edPub, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	f := &signatureFloor{ecKey: &ec.PublicKey, edKey: edPub}
	// Distinct inputs, so nothing is cached between two checks.
	for i := range 512 {
		event := fmt.Appendf(nil, `{"specversion":"1.0","id":"fixture-%d","source":"urn:nova:bench","type":"nova.plan.created","time":"2026-01-01T00:00:00Z","datacontenttype":"application/json","runid":"run","contractid":"c-%03d","environment":"dev","seq":%d,"preveventhash":"%064x","data":{"stage":"plan","summary":"3 to add, 0 to change, 0 to destroy","verdict":"pass"}}`, i, i%100, i/100+1, i)
		sum := sha256.Sum256(event)
		sig, err := ecdsa.SignASN1(rand.Reader, ec, sum[:])
		if err != nil {
			b.Fatal(err)
		}
		commit := fmt.Appendf(nil, "tree %040x\nparent %040x\nauthor Nova Test <nova-test@example.com> 1767225600 +0000\ncommitter Nova Test <nova-test@example.com> 1767225600 +0000\n\nnova.plan.created c-%03d dev seq=%d\n", i, i+1, i%100, i/100+1)
		digest := sha256.Sum256(commit)
		f.events, f.ecSigs = append(f.events, event), append(f.ecSigs, sig)
		f.commits, f.edSigs = append(f.commits, commit), append(f.edSigs, ed25519.Sign(edPriv, digest[:]))
	}
	return f
}

// run checks n events' two signatures on one worker per CPU, as verify
// spreads its work.
func (f *signatureFloor) run(b *testing.B, n int) {
	err := chain.ForEachChunk(runtime.GOMAXPROCS(0), n, func(_, lo, hi int) error {
		for i := lo; i < hi; i++ {
			j := i % len(f.events)
			sum := sha256.Sum256(f.events[j])
			if !ecdsa.VerifyASN1(f.ecKey, sum[:], f.ecSigs[j]) {
				return fmt.Errorf("event signature %d does not verify", j)
			}
			digest := sha256.Sum256(f.commits[j])
			if !ed25519.Verify(f.edKey, digest[:], f.edSigs[j]) {
				return fmt.Errorf("commit signature %d does not verify", j)
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

var fixtureOnce sync.Once
var fixtureRepo string
var fixtureKeys signing.Keys

func verifyFixture(b *testing.B, contracts, perContract int) (string, signing.Keys) {
	fixtureOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nova-evidence-bench-")
		if err != nil {
			b.Fatal(err)
		}
		fixtureRoot = dir
		fixtureKeys = newKeys(b)
		fixtureRepo = filepath.Join(dir, "evidence.git")
		start := time.Now()
		if err := buildFixture(fixtureRepo, fixtureKeys, contracts, perContract); err != nil {
			b.Fatal(err)
		}
		b.Logf("built a %d-event fixture in %s", contracts*perContract, time.Since(start).Round(time.Second))
	})
	if fixtureRepo == "" {
		b.Fatal("fixture build failed earlier")
	}
	return fixtureRepo, fixtureKeys
}

// buildFixture writes events round-robin over contracts with the store's
// own commit code, straight into a bare repo without fsync or outbox (what
// BenchmarkEvidenceAppend measures), then packs it.
func buildFixture(path string, keys signing.Keys, contracts, perContract int) error {
	branch := plumbing.NewBranchReferenceName(chain.DefaultBranch)
	if err := gitrepo.InitBare(path, branch); err != nil {
		return err
	}
	bare, err := gitrepo.OpenBare(path, branch, func(...string) error { return nil }, func(string, ...any) {})
	if err != nil {
		return err
	}
	defer bare.Close()
	reader := gitrepo.NewReader(bare.Objects())
	type head struct {
		seq  int64
		hash string
	}
	heads := map[string]head{}
	commit := plumbing.ZeroHash
	data, _ := json.Marshal(map[string]string{"stage": "plan", "verdict": "pass", "summary": "3 to add, 0 to change, 0 to destroy"})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range contracts * perContract {
		c := fmt.Sprintf("c-%03d", i%contracts)
		h := heads[c]
		e := runner.Event{
			SpecVersion: "1.0", ID: fmt.Sprintf("fixture-%d", i), Source: "urn:nova:bench", Type: "nova.plan.created",
			Time: t0.Add(time.Duration(i) * time.Second), DataContentType: "application/json", RunID: "run", ContractID: c,
			Environment: "dev", Seq: h.seq + 1, PrevEventHash: h.hash, Data: data,
		}
		canon, err := e.Canonical()
		if err != nil {
			return err
		}
		sig, err := keys.Events.Sign(canon)
		if err != nil {
			return err
		}
		ec, err := writeEventCommit(reader, commit, c, e.Seq, e.Type, canon, sig, chain.CommitMessage(e), keys.Commit, e.Time)
		if err != nil {
			return err
		}
		if err := bare.Push(context.Background(), commit, ec.head, ec.objs); err != nil {
			return err
		}
		bare.Keep(ec.objs)
		commit = ec.head
		sum := sha256.Sum256(canon)
		heads[c] = head{seq: e.Seq, hash: hex.EncodeToString(sum[:])}
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return fmt.Errorf("git is not on PATH: run `make tools`")
	}
	if out, err := exec.Command(gitBin, "--git-dir", path, "repack", "-a", "-d", "-q").CombinedOutput(); err != nil {
		return fmt.Errorf("git repack: %v\n%s", err, out)
	}
	return nil
}

// BenchmarkEvidenceVerifySince measures `verify --since` on the verify
// fixture with its last 0, 100 and 1 000 events new since a head: the cost
// should follow the new events (the 0 case is the fixed cost of opening the
// repo and reading its head), not the 10 000 before them.
func BenchmarkEvidenceVerifySince(b *testing.B) {
	const contracts, perContract = 100, 100
	for _, fresh := range []int{0, 100, 1000} {
		b.Run(fmt.Sprintf("new=%d", fresh), func(b *testing.B) {
			benchmarkVerifySince(b, contracts, perContract, fresh)
		})
	}
}

func benchmarkVerifySince(b *testing.B, contracts, perContract, fresh int) {
	repo, keys := verifyFixture(b, contracts, perContract)
	opts := verifyOptions(b, keys)
	ctx := context.Background()
	r, err := chain.OpenRepo(ctx, repo, "", chain.Credentials{})
	if err != nil {
		b.Fatal(err)
	}
	since := r.HeadHash()
	reader := r.NewReader()
	for range fresh {
		c, err := reader.Commit(since)
		if err != nil {
			b.Fatal(err)
		}
		since = c.FirstParent()
	}
	r.Close()
	opts.Since = since.String()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep := verifyRepo(b, repo, opts)
		if !rep.OK() || rep.Events != fresh || rep.Commits != fresh {
			b.Fatalf("fixture does not verify since %s: %d events, %d commits%s", since, rep.Events, rep.Commits, dumpFindings(rep))
		}
	}
	if fresh > 0 {
		b.ReportMetric(float64(b.N*fresh)/b.Elapsed().Seconds(), "events/s")
	}
}

// writeEventCommit writes one event as one signed commit on top of
// parent: a batch of one.
func writeEventCommit(r *gitrepo.Reader, parent plumbing.Hash, dir string, seq int64, typ string, event, sig []byte, msg string, cs *signing.CommitSigner, when time.Time) (*eventCommits, error) {
	b, err := newEventCommits(r, parent, dir)
	if err == nil {
		err = b.add(seq, typ, event, sig, msg, cs, when)
	}
	return b, err
}

// BenchmarkFirstSync measures a store's first sync on a state dir with no
// witness, as a hosted CI job starts: every commit of the history is
// checked (the verify fixture's 10 000, one per event). "commits/s" is
// the rate.
func BenchmarkFirstSync(b *testing.B) {
	const contracts, perContract = 100, 100
	repo, keys := verifyFixture(b, contracts, perContract)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		state, err := os.MkdirTemp(fixtureRoot, "first-sync-")
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		s, err := Open(ctx, Config{Repo: repo, StateDir: state, Keys: keys})
		if err == nil {
			err = s.Sync(ctx)
			s.Close()
		}
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(state)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N*contracts*perContract)/b.Elapsed().Seconds(), "commits/s")
}
