package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
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
			if _, err := createCA(dir, time.Now().Add(-CAValidity-time.Hour), Constraints{}); err != nil {
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
	ca, err := LoadOrCreateCAFor(t.TempDir(), Constraints{DNSDomains: []string{"hoist.example"}, IPs: []net.IP{net.ParseIP("10.1.2.3")}})
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

func TestNameConstraints(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	c := Constraints{DNSDomains: []string{"games.example"}, IPs: []net.IP{net.ParseIP("192.0.2.7")}}
	ca, err := LoadOrCreateCAFor(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.PermittedDNSDomainsCritical {
		t.Error("name constraints are not critical")
	}
	// verify signs a certificate for name past IssueLeaf's own check and
	// verifies it as a client would.
	verify := func(name string) error {
		var der []byte
		if ip := net.ParseIP(name); ip != nil {
			der, _, err = ca.issue(name, nil, []net.IP{ip}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
		} else {
			der, _, err = ca.issue(name, []string{name}, nil, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
		}
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		_, err = leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: name})
		if ip := net.ParseIP(name); ip != nil {
			_, err = leaf.Verify(x509.VerifyOptions{Roots: ca.Pool()})
		}
		return err
	}
	for _, ok := range []string{"localhost", "a.localhost", "games.example", "ec2-1-2-3-4.us-west-2.games.example",
		"127.0.0.1", "127.9.9.9", "::1", "192.0.2.7"} {
		if err := verify(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"www.example.com", "example", "192.0.2.8", "10.0.0.1"} {
		err := verify(bad)
		var cie x509.CertificateInvalidError
		if !errors.As(err, &cie) || cie.Reason != x509.CANotAuthorizedForThisName {
			t.Errorf("%s: err %v, want CANotAuthorizedForThisName", bad, err)
		}
		if _, _, err := ca.IssueLeaf(bad, []string{bad}); err == nil {
			t.Errorf("IssueLeaf signed %s", bad)
		}
	}
	if _, err := ca.IssueServerCert([]string{"www.example.com"}); err == nil {
		t.Error("IssueServerCert signed www.example.com")
	}
	// A later start with names the CA does not permit is refused, with
	// what to do.
	if _, err := LoadOrCreateCAFor(dir, Constraints{DNSDomains: []string{"other.example"}}); err == nil ||
		!strings.Contains(err.Error(), "other.example") || !strings.Contains(err.Error(), "move the directory away") {
		t.Errorf("load with a new name: %v", err)
	}
	if _, err := LoadOrCreateCAFor(dir, Constraints{DNSDomains: []string{"x.games.example"}}); err != nil {
		t.Errorf("load with a name under a permitted one: %v", err)
	}
}

// TestNetworkConstraints: a CA created with the pool hosts' networks signs
// their addresses (and says so: Permits) and no address outside them; a
// later start asking for a wider network is refused.
func TestNetworkConstraints(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	c := Constraints{DNSDomains: []string{"games.example"}, Networks: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15")}}
	ca, err := LoadOrCreateCAFor(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"198.18.0.10": true, "198.19.255.254": true, "198.20.0.1": false, "10.0.0.1": false,
		"127.0.0.1": true, "i-1.us-west-2.games.example": true, "host1.example.net": false} {
		if got := ca.Permits(name); got != want {
			t.Errorf("Permits(%s) = %v, want %v", name, got, want)
		}
	}
	chain, _, err := ca.IssueLeaf("198.18.0.10", []string{"198.18.0.10"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(chain)
	leaf, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: ca.Pool()}); err != nil {
		t.Errorf("a host address in the network: %v", err)
	}
	if _, _, err := ca.IssueLeaf("10.0.0.1", []string{"10.0.0.1"}); err == nil {
		t.Error("IssueLeaf signed an address outside the networks")
	}
	if _, err := LoadOrCreateCAFor(dir, Constraints{Networks: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")}}); err != nil {
		t.Errorf("load with a network inside a permitted one: %v", err)
	}
	if _, err := LoadOrCreateCAFor(dir, Constraints{Networks: []netip.Prefix{netip.MustParsePrefix("198.16.0.0/13")}}); err == nil {
		t.Error("load with a wider network was accepted")
	}
}

func TestLoadTightensPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	if _, err := LoadOrCreateCA(dir); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, KeyFileName)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	ca, err := LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ca.Fixed) != 2 {
		t.Errorf("Fixed = %q, want the directory and the key", ca.Fixed)
	}
	for name, want := range map[string]os.FileMode{dir: 0o700, key: 0o600} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", filepath.Base(name), got, want)
		}
	}
	if ca, err = LoadOrCreateCA(dir); err != nil || len(ca.Fixed) != 0 {
		t.Errorf("second load: Fixed %q, err %v", ca.Fixed, err)
	}
}

func TestWriteBundle(t *testing.T) {
	ca, err := LoadOrCreateCA(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := LoadOrCreateCA(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	rootsFile := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(rootsFile, other.CertPEM[:len(other.CertPEM)-1], 0o644); err != nil { // no final newline
		t.Fatal(err)
	}
	roots := SystemRootsPEM(func(k string) string {
		if k == "SSL_CERT_FILE" {
			return rootsFile
		}
		return ""
	})
	bundle := filepath.Join(t.TempDir(), "bundle.pem")
	if err := ca.WriteBundle(bundle, roots); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		t.Fatal("bundle holds no certificates")
	}
	for _, c := range []*x509.Certificate{ca.Cert, other.Cert} {
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
			t.Errorf("%s not in the bundle: %v", c.Subject.CommonName, err)
		}
	}
	// Written again from itself (SSL_CERT_FILE naming the bundle), it
	// does not grow.
	if err := ca.WriteBundle(bundle, data); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(bundle)
	if !bytes.Equal(again, data) {
		t.Errorf("the bundle grew from %d to %d bytes", len(data), len(again))
	}
}

// TestAdoptCA: a CA made with GenerateCA is written into an empty
// directory and loaded again from it; a directory holding another CA is
// ErrOtherCA and keeps its files.
func TestAdoptCA(t *testing.T) {
	certPEM, keyPEM, err := GenerateCA(time.Now(), Constraints{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "pki")
	for range 2 {
		ca, err := AdoptCA(dir, certPEM, keyPEM, Constraints{})
		if err != nil || !bytes.Equal(ca.CertPEM, certPEM) {
			t.Fatalf("adopting: %v", err)
		}
	}
	other := t.TempDir()
	own, err := LoadOrCreateCA(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AdoptCA(other, certPEM, keyPEM, Constraints{}); !errors.Is(err, ErrOtherCA) {
		t.Fatalf("a directory with another CA: %v, want ErrOtherCA", err)
	}
	if kept, _ := os.ReadFile(filepath.Join(other, CertFileName)); !bytes.Equal(kept, own.CertPEM) {
		t.Error("the other CA's certificate was changed")
	}
	if _, err := AdoptCA(t.TempDir(), certPEM, own.CertPEM, Constraints{}); err == nil {
		t.Error("a certificate with another CA's certificate for key: accepted")
	}
}
