package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestLoadOrCreateCA(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	ca, err := LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || ca.CertFile != filepath.Join(dir, CertFileName) {
		t.Fatalf("CA %+v", ca.Cert.Subject)
	}
	for name, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, KeyFileName): 0o600,
		filepath.Join(dir, CertFileName): 0o644} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", filepath.Base(name), got, want)
		}
	}
	again, err := LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cert.Equal(ca.Cert) {
		t.Fatal("a second load made a new CA")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("left files behind: %v", entries)
	}
}

func TestLoadOrCreateCARefusesBrokenDirectories(t *testing.T) {
	good := t.TempDir()
	if _, err := LoadOrCreateCA(good); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if _, err := LoadOrCreateCA(other); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		setup func(dir string)
		want  string
	}{
		"key only": {func(dir string) {
			copyFile(t, filepath.Join(good, KeyFileName), filepath.Join(dir, KeyFileName))
		}, "reading the CA certificate"},
		"certificate only": {func(dir string) {
			copyFile(t, filepath.Join(good, CertFileName), filepath.Join(dir, CertFileName))
		}, "reading the CA key"},
		"key of another CA": {func(dir string) {
			copyFile(t, filepath.Join(good, CertFileName), filepath.Join(dir, CertFileName))
			copyFile(t, filepath.Join(other, KeyFileName), filepath.Join(dir, KeyFileName))
		}, "does not match"},
		"garbage": {func(dir string) {
			os.WriteFile(filepath.Join(dir, CertFileName), []byte("nope"), 0o644)
			os.WriteFile(filepath.Join(dir, KeyFileName), []byte("nope"), 0o600)
		}, "no CERTIFICATE block"},
		"expired": {func(dir string) {
			if _, err := createCA(dir, time.Now().Add(-CAValidity-time.Hour)); err != nil {
				t.Fatal(err)
			}
		}, "expired"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(dir)
			_, err := LoadOrCreateCA(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestIssueServerCert(t *testing.T) {
	ca, err := LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ca.Now = func() time.Time { return now }
	cert, err := ca.IssueServerCert([]string{"hoist.example", "10.1.2.3", "127.0.0.1", ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(cert.Certificate) != 2 || cert.Leaf == nil {
		t.Fatalf("chain of %d, leaf %v", len(cert.Certificate), cert.Leaf != nil)
	}
	if !cert.Leaf.NotBefore.Equal(now.Add(-backdate)) || !cert.Leaf.NotAfter.Equal(now.Add(LeafValidity)) {
		t.Errorf("validity %v .. %v", cert.Leaf.NotBefore, cert.Leaf.NotAfter)
	}
	if len(cert.Leaf.IPAddresses) != 3 {
		t.Errorf("IP SANs %v (127.0.0.1 given twice must appear once)", cert.Leaf.IPAddresses)
	}
	for _, host := range []string{"127.0.0.1", "::1", "localhost", "hoist.example", "10.1.2.3"} {
		_, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: ca.Pool(), CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: ca.Pool(), CurrentTime: now}); err == nil {
		t.Error("verified for a name it does not carry")
	}
}

// TestTLSHandshake serves HTTPS on loopback with an issued certificate and
// connects with a client that trusts only the CA, over IPv4 and IPv6.
func TestTLSHandshake(t *testing.T) {
	ca, err := LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.IssueServerCert(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Skipf("no loopback %s: %v", addr, err)
			}
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				io.WriteString(w, "ok")
			}))
			srv.Listener = ln
			srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
			srv.StartTLS()
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
			resp, err := client.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		})
	}
}

func TestIssueLeaf(t *testing.T) {
	ca, err := LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueLeaf("i-1.fleet-1.localhost", []string{"i-1.fleet-1.localhost", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if len(pair.Certificate) != 2 {
		t.Fatalf("chain of %d certificates, want leaf + CA", len(pair.Certificate))
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if leaf.Subject.CommonName != "i-1.fleet-1.localhost" {
		t.Errorf("CN %q", leaf.Subject.CommonName)
	}
	for _, host := range []string{"i-1.fleet-1.localhost", "127.0.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: ca.Pool()}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	if b, _ := pem.Decode(keyPEM); b == nil || b.Type != "PRIVATE KEY" {
		t.Errorf("key block %v", b)
	}
	if _, _, err := ca.IssueLeaf("", nil); err == nil {
		t.Error("issued a certificate without any name")
	}
}

// TestSSLCertFileTrust checks what docs promise: a Go program started with
// SSL_CERT_FILE=<dir>/ca.pem trusts Hoist's TLS listener with the default
// TLS configuration. The program is this test binary in helper mode (Go
// loads the system roots once per process).
func TestSSLCertFileTrust(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("SSL_CERT_FILE is not honoured on " + runtime.GOOS)
	}
	ca, err := LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.IssueServerCert(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	for name, certFile := range map[string]string{"trusted": ca.CertFile, "untrusted": os.DevNull} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDefaultClient$")
			cmd.Env = append(os.Environ(), "HOIST_PKI_HELPER_URL="+url, "SSL_CERT_FILE="+certFile, "SSL_CERT_DIR=")
			out, err := cmd.CombinedOutput()
			if got, want := err == nil, name == "trusted"; got != want {
				t.Fatalf("helper succeeded=%v, want %v:\n%s", got, want, out)
			}
		})
	}
}

func TestHelperDefaultClient(t *testing.T) {
	url := os.Getenv("HOIST_PKI_HELPER_URL")
	if url == "" {
		t.Skip("helper for TestSSLCertFileTrust")
	}
	resp, err := http.Get(url)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	resp.Body.Close()
}
