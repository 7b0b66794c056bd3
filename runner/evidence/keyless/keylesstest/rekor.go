package keylesstest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	_ "github.com/lib/pq"

	"github.com/nova-platform/nova/runner/postgres/pgtest"
)

// TrillianVersion and RekorVersion are what .ci/tools.sh builds
// (TRILLIAN_VERSION, REKOR_VERSION there).
const (
	TrillianVersion = "v1.7.3"
	RekorVersion    = "v1.5.4"
)

// Rekor is a running Rekor transparency log: rekor-server over Trillian's
// log server and signer, storing in a PostgreSQL of its own.
type Rekor struct {
	// URL is rekor-server's API.
	URL string
	// PublicKeyPEM is the key that signs its checkpoints and entry
	// timestamps (ephemeral: made when the server started); PublicKeyFile
	// holds it for SIGSTORE_REKOR_PUBLIC_KEY.
	PublicKeyPEM  []byte
	PublicKeyFile string

	// stop ends rekor-server (and only it: Trillian and PostgreSQL stay,
	// for a test of a log that went away).
	stop func()
}

// Stop ends rekor-server now, before the test does; the rest is stopped
// when the test ends.
func (r *Rekor) Stop() { r.stop() }

// rekorTool finds a pinned tool: in the tools cache under its versioned
// name (.ci/tools.sh trillian / rekor). One on PATH may be another version
// and is not used.
func rekorTool(name, version, install string) (string, error) {
	bin, err := toolsBin()
	if err != nil {
		return "", err
	}
	p := filepath.Join(bin, name+"-"+version)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s %s not found at %s: run `.ci/tools.sh %s` (or `make tools`)", name, version, p, install)
	}
	return p, nil
}

// StartRekor runs a Rekor log on 127.0.0.1: a PostgreSQL (pgtest) holding
// Trillian's schema, trillian_log_server and trillian_log_signer on free
// ports, and rekor-server with an in-memory signer and no search index
// (so no Redis), which creates its tree at start. Everything is stopped
// when the test ends. A missing binary fails the test.
func StartRekor(t testing.TB) *Rekor {
	t.Helper()
	var bins [3]string
	for i, tool := range [][3]string{
		{"trillian_log_server", TrillianVersion, "trillian"},
		{"trillian_log_signer", TrillianVersion, "trillian"},
		{"rekor-server", RekorVersion, "rekor"},
	} {
		p, err := rekorTool(tool[0], tool[1], tool[2])
		if err != nil {
			t.Fatal(err)
		}
		bins[i] = p
	}
	schema, err := trillianSchema()
	if err != nil {
		t.Fatal(err)
	}
	pg := pgtest.Start(t)
	if err := loadSchema(t.Context(), pg.URL, schema); err != nil {
		t.Fatalf("creating Trillian's schema: %v", err)
	}
	dir := t.TempDir()
	storage := []string{"--storage_system=postgresql", "--postgresql_uri=" + pg.URL, "--quota_system=noop"}

	var rpc string
	var lastErr error
	for range 3 {
		if rpc, lastErr = startTrillian(t, bins[0], "trillian_log_server", storage, nil); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatal(lastErr)
	}
	for range 3 {
		// The signer integrates queued entries into the tree; rekor waits
		// for that before it answers an upload with its inclusion proof.
		if _, lastErr = startTrillian(t, bins[1], "trillian_log_signer", storage,
			[]string{"--force_master", "--sequencer_interval=50ms", "--batch_size=100"}); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatal(lastErr)
	}
	for range 3 {
		r, err := startRekorServer(t, bins[2], dir, rpc)
		if err == nil {
			return r
		}
		lastErr = err
	}
	t.Fatalf("starting rekor-server: %v", lastErr)
	return nil
}

// trillianSchema is Trillian's PostgreSQL schema, which .ci/tools.sh
// copies beside the binaries (storage/postgresql/schema/storage.sql of
// the same version).
func trillianSchema() ([]byte, error) {
	bin, err := toolsBin()
	if err != nil {
		return nil, err
	}
	p := filepath.Join(bin, "trillian-"+TrillianVersion+"-postgresql.sql")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("trillian's schema: %w: run `.ci/tools.sh trillian` (or `make tools`)", err)
	}
	return b, nil
}

// loadSchema runs the schema as one simple query: PostgreSQL itself
// splits the statements, dollar-quoted function bodies included.
func loadSchema(ctx context.Context, url string, schema []byte) error {
	db, err := sql.Open("postgres", url)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, string(schema))
	return err
}

// process is a started server: its log, and a channel closed when it
// has exited.
type process struct {
	logs   *LockedBuffer
	exited chan struct{}
	stop   func()
}

func start(t testing.TB, name, bin, dir string, args ...string) (*process, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	p := &process{logs: &LockedBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("running %s: %w", bin, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			cancel()
			<-p.exited
		})
	}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.logs.String())
		}
	})
	return p, nil
}

// startTrillian starts a Trillian server on free ports and waits until its
// HTTP endpoint reports healthy; it returns the gRPC endpoint.
func startTrillian(t testing.TB, bin, name string, storage, extra []string) (string, error) {
	rpcPort, err := freePort()
	if err != nil {
		return "", err
	}
	httpPort, err := freePort()
	if err != nil {
		return "", err
	}
	rpc := "127.0.0.1:" + strconv.Itoa(rpcPort)
	args := append([]string{"--rpc_endpoint=" + rpc, "--http_endpoint=127.0.0.1:" + strconv.Itoa(httpPort)}, storage...)
	p, err := start(t, name, bin, t.TempDir(), append(args, extra...)...)
	if err != nil {
		return "", err
	}
	if err := waitOK("http://127.0.0.1:"+strconv.Itoa(httpPort)+"/healthz", name, p.exited); err != nil {
		p.stop()
		return "", fmt.Errorf("%w\n%s", err, p.logs.String())
	}
	return rpc, nil
}

func startRekorServer(t testing.TB, bin, dir, trillianRPC string) (*Rekor, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	host, tport, err := net.SplitHostPort(trillianRPC)
	if err != nil {
		return nil, err
	}
	// No --trillian_log_server.tlog_id: rekor creates and initialises a
	// tree through Trillian's admin API. The search index (Redis) is off;
	// uploads and entry reads do not need it. Its metrics listener is
	// fixed at :2112 in v1.5.4 and tolerates the port being taken.
	p, err := start(t, "rekor-server", bin, dir, "serve",
		"--rekor_server.address=127.0.0.1", "--port="+strconv.Itoa(port),
		"--rekor_server.hostname=rekor.nova.test",
		"--rekor_server.signer=memory",
		"--trillian_log_server.address="+host, "--trillian_log_server.port="+tport,
		"--enable_retrieve_api=false",
		"--enabled_api_endpoints=getLogInfo,getPublicKey,getLogProof,createLogEntry,getLogEntryByIndex,getLogEntryByUUID,searchLogQuery",
		"--log_type=dev")
	if err != nil {
		return nil, err
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	// The log info answers once the tree is created and readable.
	if err := waitOK(base+"/api/v1/log", "rekor-server", p.exited); err != nil {
		p.stop()
		return nil, fmt.Errorf("%w\n%s", err, p.logs.String())
	}
	resp, err := http.Get(base + "/api/v1/log/publicKey")
	if err != nil {
		p.stop()
		return nil, err
	}
	defer resp.Body.Close()
	pub, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		p.stop()
		return nil, fmt.Errorf("rekor public key: %s %v", resp.Status, err)
	}
	r := &Rekor{URL: base, PublicKeyPEM: pub, PublicKeyFile: filepath.Join(dir, "rekor.pub"), stop: p.stop}
	if err := os.WriteFile(r.PublicKeyFile, pub, 0o600); err != nil {
		return nil, err
	}
	return r, nil
}

// waitOK polls url until it answers 200 or the process exits (a port
// taken in between, a bad flag).
func waitOK(url, name string, exited <-chan struct{}) error {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Minute)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New(name + " exited before serving")
		case <-deadline:
			return fmt.Errorf("%s did not answer %s within two minutes", name, url)
		case <-tick.C:
		}
	}
}
