package keylesstest

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sigstore/fulcio/pkg/api"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// FulcioVersion is the Fulcio .ci/tools.sh builds (FULCIO_VERSION there):
// the certificate extensions the tests read are this version's.
const FulcioVersion = "v1.8.8"

// Fulcio is a running Fulcio with an ephemeral CA.
type Fulcio struct {
	// URL is the server (HTTP and gRPC on one port).
	URL string
	// RootPEM is the CA chain every certificate it issues chains to;
	// RootFile holds it on disk for `cosign --certificate-chain` and
	// SIGSTORE_ROOT_FILE.
	RootPEM  []byte
	RootFile string
	// Roots and Intermediates are RootPEM split for x509 verification.
	Roots         *x509.CertPool
	Intermediates *x509.CertPool
}

// FulcioBin finds the pinned fulcio: NOVA_FULCIO_BIN, else
// fulcio-<FulcioVersion> in the tools cache. One on PATH may be another
// version and is not used.
func FulcioBin() (string, error) {
	if p := os.Getenv("NOVA_FULCIO_BIN"); p != "" {
		return p, nil
	}
	bin, err := toolsBin()
	if err != nil {
		return "", err
	}
	p := filepath.Join(bin, "fulcio-"+FulcioVersion)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("fulcio %s not found at %s: run `.ci/tools.sh fulcio` (or `make tools`)", FulcioVersion, p)
	}
	return p, nil
}

// toolsBin is .ci/tools.sh's TOOLS_BIN, computed the same way.
func toolsBin() (string, error) {
	if d := os.Getenv("NOVA_TOOLS_BIN"); d != "" {
		return d, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locating the tools cache: %w", err)
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "nova-tools", "bin"), nil
}

// StartFulcio runs the real fulcio binary on 127.0.0.1 with an ephemeral
// CA, trusting iss as a GitHub Actions issuer (type github-workflow, so its
// certificates carry the workflow extensions: Build Signer URI, Source
// Repository URI, …), no CT log. It is stopped when the test ends. A
// missing binary fails the test.
func StartFulcio(t testing.TB, iss *Issuer) *Fulcio {
	t.Helper()
	bin, err := FulcioBin()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := map[string]any{"OIDCIssuers": map[string]any{
		iss.URL: map[string]string{"IssuerURL": iss.URL, "ClientID": "sigstore", "Type": "github-workflow"},
	}}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// The port is found free and handed over, so another process may take
	// it in between: fulcio then exits at once, and a new port is tried.
	var lastErr error
	for range 3 {
		f, err := startFulcio(t, bin, dir, cfgPath)
		if err == nil {
			return f
		}
		lastErr = err
	}
	t.Fatalf("starting fulcio: %v", lastErr)
	return nil
}

func startFulcio(t testing.TB, bin, dir, cfgPath string) (*Fulcio, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	grpcPort, err := freePort()
	if err != nil {
		return nil, err
	}
	// The legacy gRPC server's unix socket: a short path, as a socket's
	// name is bounded (108 bytes) and a test's temporary dir may be long.
	sockDir, err := os.MkdirTemp("", "fulcio")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	ctx, cancel := context.WithCancel(context.Background())
	// HTTP and gRPC on ports of their own: with one port for both,
	// fulcio v1.8.8's duplex server registers its metrics twice and
	// panics. The metrics go to a port of the kernel's choosing.
	cmd := exec.CommandContext(ctx, bin, "serve",
		"--ca", "ephemeralca",
		"--config-path", cfgPath,
		"--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--grpc-host", "127.0.0.1", "--grpc-port", strconv.Itoa(grpcPort),
		"--legacy-unix-domain-socket", filepath.Join(sockDir, "legacy.sock"),
		"--metrics-port", "0",
		"--ct-log-url", "",
		"--log_type", "dev")
	cmd.Dir = dir
	var logs LockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("running %s: %w", bin, err)
	}
	// exited is closed when the process has ended, waitErr then says how.
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		cancel()
		<-exited
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	if err := waitOK(base+"/healthz", "fulcio", exited); err != nil {
		stop()
		return nil, fmt.Errorf("%w (%v)\n%s", err, waitErr, logs.String())
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("fulcio log:\n%s", logs.String())
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	root, err := api.NewClient(u).RootCert()
	if err != nil {
		return nil, fmt.Errorf("fulcio root: %w", err)
	}
	f := &Fulcio{URL: base, RootPEM: root.ChainPEM, RootFile: filepath.Join(dir, "fulcio-root.pem")}
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM(root.ChainPEM)
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("fulcio root is not PEM certificates: %v", err)
	}
	f.Roots, f.Intermediates = x509.NewCertPool(), x509.NewCertPool()
	for _, c := range certs {
		if bytes.Equal(c.RawIssuer, c.RawSubject) {
			f.Roots.AddCert(c)
		} else {
			f.Intermediates.AddCert(c)
		}
	}
	if err := os.WriteFile(f.RootFile, root.ChainPEM, 0o600); err != nil {
		return nil, err
	}
	return f, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// LockedBuffer collects a process's output, written by exec's copying
// goroutines while a failing test may read it.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
