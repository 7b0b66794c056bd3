package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
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
// Goal ≥ 20 000/s. The fixture is built once per test binary.
func BenchmarkEvidenceVerify(b *testing.B) {
	const contracts, perContract = 100, 100
	repo, keys := verifyFixture(b, contracts, perContract)
	opts := verifyOptions(b, keys)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := OpenRepo(ctx, repo, "", Credentials{})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := Verify(ctx, r, opts)
		r.Close()
		if err != nil {
			b.Fatal(err)
		}
		if !rep.OK() || rep.Events != contracts*perContract {
			b.Fatalf("fixture does not verify: %d events%s", rep.Events, dumpFindings(rep))
		}
	}
	b.ReportMetric(float64(b.N*contracts*perContract)/b.Elapsed().Seconds(), "events/s")
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
	branch := plumbing.NewBranchReferenceName(DefaultBranch)
	if err := gitrepo.InitBare(path, branch); err != nil {
		return err
	}
	bare, err := gitrepo.OpenBare(path, branch, func(...string) error { return nil })
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
		ec, err := writeEventCommit(reader, commit, c, eventFileName(e.Seq, e.Type, "json"), canon, sig, CommitMessage(e), keys.Commit, e.Time)
		if err != nil {
			return err
		}
		if err := bare.Push(context.Background(), commit, ec.head, ec.objs); err != nil {
			return err
		}
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
