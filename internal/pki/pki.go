// Package pki is Hoist's own small certificate authority: an ECDSA P-256 CA
// created on first start and kept as PEM files in a directory, which issues
// the certificate of Hoist's TLS listener (wss:// for the Server SDK, https://
// for the API) and the certificates of fleets with GENERATED certificates.
// A CA carries X.509 name constraints (Constraints): it can sign only
// localhost, the loopback addresses and the names it was created for.
//
// Files in the CA directory (0700):
//
//	ca.pem      the CA certificate (0644): what clients must trust
//	ca-key.pem  the CA private key, PKCS#8 (0600)
//
// A Go game server (the official Go Server SDK uses crypto/tls with the
// system roots) trusts Hoist's wss listener when started with
// SSL_CERT_FILE naming a bundle of the system roots and ca.pem (WriteBundle
// writes one) on Linux and the BSDs. macOS and Windows ignore
// SSL_CERT_FILE: add ca.pem to the system trust store there.
package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// File names inside the CA directory.
const (
	CertFileName = "ca.pem"
	KeyFileName  = "ca-key.pem"
)

// Validity periods.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	LeafValidity = 397 * 24 * time.Hour // the most public TLS certificates may last
	// backdate is how far NotBefore lies in the past, for clocks that lag.
	backdate = time.Hour
)

// CA is a loaded certificate authority.
type CA struct {
	// Cert is the CA certificate; CertPEM its PEM encoding.
	Cert    *x509.Certificate
	CertPEM []byte
	// CertFile is the path of ca.pem (what SSL_CERT_FILE should name).
	CertFile string
	key      *ecdsa.PrivateKey
	// Now is the clock certificates are dated by (default time.Now).
	Now func() time.Time
	// Fixed lists the permissions LoadOrCreateCAFor tightened, for the log.
	Fixed []string
}

// Constraints are the names a CA may issue certificates for, written into
// the CA certificate as X.509 name constraints: a certificate for any other
// name fails verification even if the CA key leaks. DNS entries permit the
// name and every name under it; Networks permit every address in them (the
// pool hosts' networks); loopback addresses (127.0.0.0/8, ::1) are always
// permitted, as is the name localhost.
type Constraints struct {
	DNSDomains []string
	IPs        []net.IP
	Networks   []netip.Prefix
}

func (c Constraints) domains() []string {
	out := []string{"localhost"}
	for _, d := range c.DNSDomains {
		d = strings.TrimPrefix(strings.ToLower(d), "*.")
		if d != "" && net.ParseIP(d) == nil && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

func (c Constraints) ipNets() []*net.IPNet {
	out := []*net.IPNet{
		{IP: net.IPv4(127, 0, 0, 0).To4(), Mask: net.CIDRMask(8, 32)},
		{IP: net.IPv6loopback, Mask: net.CIDRMask(128, 128)},
	}
	for _, ip := range c.IPs {
		n := &net.IPNet{IP: ip.To16(), Mask: net.CIDRMask(128, 128)}
		if v4 := ip.To4(); v4 != nil {
			n = &net.IPNet{IP: v4, Mask: net.CIDRMask(32, 32)}
		}
		if !n.IP.IsLoopback() {
			out = append(out, n)
		}
	}
	for _, p := range c.Networks {
		p = p.Masked()
		out = append(out, &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())})
	}
	return out
}

// permits reports whether a CA certificate's name constraints allow every
// name of c (a CA without constraints allows everything).
func permits(cert *x509.Certificate, c Constraints) error {
	if len(cert.PermittedDNSDomains) == 0 && len(cert.PermittedIPRanges) == 0 {
		return nil
	}
	for _, d := range c.domains() {
		ok := false
		for _, p := range cert.PermittedDNSDomains {
			if d == p || strings.HasSuffix(d, "."+p) {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("its name constraints do not permit DNS name %s", d)
		}
	}
	for _, ip := range c.IPs {
		if !permitsIP(cert, ip) {
			return fmt.Errorf("its name constraints do not permit IP address %s", ip)
		}
	}
	for _, p := range c.Networks {
		p = p.Masked()
		last := lastAddr(p)
		if !permitsIP(cert, p.Addr().AsSlice()) || !permitsIP(cert, last.AsSlice()) || !sameRange(cert, p.Addr(), last) {
			return fmt.Errorf("its name constraints do not permit the network %s", p)
		}
	}
	return nil
}

// permitsIP reports whether a CA certificate's permitted ranges hold ip.
func permitsIP(cert *x509.Certificate, ip net.IP) bool {
	for _, n := range cert.PermittedIPRanges {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// sameRange reports whether one permitted range of cert holds both a and b
// (so every address between them).
func sameRange(cert *x509.Certificate, a, b netip.Addr) bool {
	for _, n := range cert.PermittedIPRanges {
		if n.Contains(a.AsSlice()) && n.Contains(b.AsSlice()) {
			return true
		}
	}
	return false
}

// lastAddr is the last address of a masked prefix.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// Permits reports whether the CA may sign a certificate naming name (a DNS
// name or an IP address): names its constraints do not permit would fail
// verification, so they are left out of the certificates it issues.
func (ca *CA) Permits(name string) bool {
	c := Constraints{}
	if ip := net.ParseIP(name); ip != nil {
		c.IPs = []net.IP{ip}
	} else {
		c.DNSDomains = []string{name}
	}
	return permits(ca.Cert, c) == nil
}

// LoadOrCreateCA is LoadOrCreateCAFor with no names beyond localhost and
// the loopback addresses.
func LoadOrCreateCA(dir string) (*CA, error) { return LoadOrCreateCAFor(dir, Constraints{}) }

// LoadOrCreateCAFor loads the CA kept in dir, or creates one there (and dir
// itself, mode 0700) when dir holds neither file, constrained to the names
// of c. A directory holding only one of the two files, a key that does not
// match the certificate, an expired CA, or a CA whose name constraints do
// not permit the names of c is an error: Hoist never silently replaces a
// CA that clients may already trust. A loaded CA whose directory or key
// file others can read is tightened to 0700 and 0600 (ca.Fixed says so).
func LoadOrCreateCAFor(dir string, c Constraints) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CertFileName), filepath.Join(dir, KeyFileName)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	switch {
	case errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist):
		return createCA(dir, time.Now(), c)
	case certErr != nil:
		return nil, fmt.Errorf("pki: reading the CA certificate: %w", certErr)
	case keyErr != nil:
		return nil, fmt.Errorf("pki: reading the CA key: %w", keyErr)
	}
	ca, err := parseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: the CA in %s: %w", dir, err)
	}
	if !time.Now().Before(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("pki: the CA in %s expired on %s; move the directory away to create a new one",
			dir, ca.Cert.NotAfter.Format(time.DateOnly))
	}
	if err := permits(ca.Cert, c); err != nil {
		return nil, fmt.Errorf("pki: the CA in %s cannot be used: %w; move the directory away to create a new CA (clients must then trust the new %s)",
			dir, err, CertFileName)
	}
	if ca.Fixed, err = tighten(dir, keyPath); err != nil {
		return nil, err
	}
	ca.CertFile = certPath
	return ca, nil
}

// tighten makes the CA directory 0700 and the key 0600 where they are
// looser, and says what it changed.
func tighten(dir, keyPath string) ([]string, error) {
	var fixed []string
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o700}, {keyPath, 0o600}} {
		fi, err := os.Stat(f.path)
		if err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
		if fi.Mode().Perm()&^f.mode != 0 {
			if err := os.Chmod(f.path, f.mode); err != nil {
				return nil, fmt.Errorf("pki: tightening %s to %v: %w", f.path, f.mode, err)
			}
			fixed = append(fixed, fmt.Sprintf("%s: %v -> %v", f.path, fi.Mode().Perm(), f.mode))
		}
	}
	return fixed, nil
}

func createCA(dir string, now time.Time, c Constraints) (*CA, error) {
	certPEM, keyPEM, err := GenerateCA(now, c)
	if err != nil {
		return nil, err
	}
	return writeCA(dir, certPEM, keyPEM)
}

// GenerateCA makes a new CA constrained to the names of c, valid from now
// (backdated) for CAValidity, and returns its certificate and PKCS#8 key
// as PEM without writing them anywhere (a cluster's first replica stores
// them in the database before any replica writes its files).
func GenerateCA(now time.Time, c Constraints) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{Organization: []string{"Hoist"}, CommonName: "Hoist local CA " + host},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		// RFC 5280 says name constraints must be critical; Go, OpenSSL and
		// the other common TLS stacks understand them.
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         c.domains(),
		PermittedIPRanges:           c.ipNets(),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

// writeCA writes a CA's files into dir (made 0700) and returns it loaded.
func writeCA(dir string, certPEM, keyPEM []byte) (*CA, error) {
	ca, err := parseCA(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	// The key first: a crash between the two writes leaves a directory that
	// LoadOrCreateCA refuses, rather than a certificate without its key.
	if err := writeFileAtomic(filepath.Join(dir, KeyFileName), keyPEM, 0o600); err != nil {
		return nil, err
	}
	certPath := filepath.Join(dir, CertFileName)
	if err := writeFileAtomic(certPath, certPEM, 0o644); err != nil {
		return nil, err
	}
	ca.CertFile = certPath
	return ca, nil
}

// ReadCAFiles returns the PEM files of the CA kept in dir; ok is false
// when dir holds neither file (one without the other is an error).
func ReadCAFiles(dir string) (certPEM, keyPEM []byte, ok bool, err error) {
	certPEM, certErr := os.ReadFile(filepath.Join(dir, CertFileName))
	keyPEM, keyErr := os.ReadFile(filepath.Join(dir, KeyFileName))
	switch {
	case errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist):
		return nil, nil, false, nil
	case certErr != nil:
		return nil, nil, false, fmt.Errorf("pki: reading the CA certificate: %w", certErr)
	case keyErr != nil:
		return nil, nil, false, fmt.Errorf("pki: reading the CA key: %w", keyErr)
	}
	return certPEM, keyPEM, true, nil
}

// ErrOtherCA is AdoptCA's error when the directory already holds a CA
// other than the one to adopt.
var ErrOtherCA = errors.New("pki: the directory holds another CA")

// AdoptCA makes dir hold the CA certPEM and keyPEM (a cluster's, read from
// its database) and loads it as LoadOrCreateCAFor does, with the same
// checks (expiry, the names of c). A dir holding neither file gets them;
// one already holding this CA is loaded; one holding another CA is left
// untouched and is ErrOtherCA: its CA may be trusted by clients.
func AdoptCA(dir string, certPEM, keyPEM []byte, c Constraints) (*CA, error) {
	want, err := parseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: the CA to adopt: %w", err)
	}
	haveCert, _, ok, err := ReadCAFiles(dir)
	if err != nil {
		return nil, err
	}
	if ok {
		cb, _ := pem.Decode(haveCert)
		if cb == nil || !bytes.Equal(cb.Bytes, want.Cert.Raw) {
			return nil, fmt.Errorf("%w (%s)", ErrOtherCA, dir)
		}
	} else if _, err := writeCA(dir, certPEM, keyPEM); err != nil {
		return nil, err
	}
	return LoadOrCreateCAFor(dir, c)
}

// parseCA decodes a CA certificate and its key and checks they belong
// together.
func parseCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("no CERTIFICATE block in " + CertFileName)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	if !cert.IsCA {
		return nil, errors.New(CertFileName + " is not a CA certificate")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("no PEM block in " + KeyFileName)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New(KeyFileName + " is not an ECDSA key")
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || !pub.Equal(&key.PublicKey) {
		return nil, errors.New(KeyFileName + " does not match " + CertFileName)
	}
	return &CA{Cert: cert, CertPEM: certPEM, key: key}, nil
}

// writeFileAtomic writes data to a temporary file next to path and renames
// it into place.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op after the rename
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("pki: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("pki: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("pki: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

// Pool returns a certificate pool holding only the CA (for clients in
// tests and tools).
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// IssueServerCert issues a certificate for Hoist's TLS listener. Its
// subject alternative names are 127.0.0.1, ::1 and localhost plus hosts
// (IP addresses become IP SANs, anything else DNS names). The returned
// certificate carries the chain (leaf, CA) and its parsed Leaf.
func (ca *CA) IssueServerCert(hosts []string) (tls.Certificate, error) {
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	names := []string{"localhost"}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = appendIP(ips, ip)
		} else if h != "" {
			names = appendName(names, h)
		}
	}
	if err := permits(ca.Cert, Constraints{DNSDomains: names, IPs: ips}); err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: the CA in %s cannot sign the TLS listener's certificate: %w", filepath.Dir(ca.CertFile), err)
	}
	der, key, err := ca.issue(names[0], names, ips, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

// IssueLeaf issues a TLS server certificate for commonName and dnsNames
// (entries that parse as IP addresses become IP SANs). certPEM holds the
// certificate followed by the CA certificate (the chain a TLS server
// presents); keyPEM the PKCS#8 private key.
func (ca *CA) IssueLeaf(commonName string, dnsNames []string) (certPEM, keyPEM []byte, err error) {
	var names []string
	var ips []net.IP
	for _, n := range dnsNames {
		if ip := net.ParseIP(n); ip != nil {
			ips = appendIP(ips, ip)
		} else if n != "" {
			names = appendName(names, n)
		}
	}
	if err := permits(ca.Cert, Constraints{DNSDomains: names, IPs: ips}); err != nil {
		return nil, nil, fmt.Errorf("pki: the CA cannot sign a certificate for %s: %w", commonName, err)
	}
	der, key, err := ca.issue(commonName, names, ips, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certPEM = append(certPEM, ca.CertPEM...)
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// issue signs a new ECDSA P-256 leaf certificate.
func (ca *CA) issue(cn string, names []string, ips []net.IP, usage []x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey, error) {
	if cn == "" && len(names) == 0 && len(ips) == 0 {
		return nil, nil, errors.New("pki: a certificate needs a common name or a subject alternative name")
	}
	now := time.Now()
	if ca.Now != nil {
		now = ca.Now()
	}
	notAfter := now.Add(LeafValidity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      pkix.Name{Organization: []string{"Hoist"}, CommonName: cn},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		DNSNames:     names,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: signing a certificate: %w", err)
	}
	return der, key, nil
}

func appendIP(ips []net.IP, ip net.IP) []net.IP {
	for _, have := range ips {
		if have.Equal(ip) {
			return ips
		}
	}
	return append(ips, ip)
}

func appendName(names []string, n string) []string {
	for _, have := range names {
		if have == n {
			return names
		}
	}
	return append(names, n)
}

// newSerial returns a random 128-bit serial number.
func newSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic("pki: no randomness: " + err.Error())
	}
	return n
}

// systemRootFiles are the CA bundles of the common Linux and BSD
// distributions, where Go's crypto/x509 looks too.
var systemRootFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo, Arch
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine, the BSDs
}

// SystemRootsPEM returns the system's CA bundle: the file $SSL_CERT_FILE
// names, else the first of the usual locations that exists; nil when there
// is none.
func SystemRootsPEM(getenv func(string) string) []byte {
	files := systemRootFiles
	if f := getenv("SSL_CERT_FILE"); f != "" {
		files = []string{f}
	}
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil && len(data) > 0 {
			return data
		}
	}
	return nil
}

// WriteBundle writes path (mode 0644): roots followed by the CA
// certificate, the file a launched process gets as SSL_CERT_FILE so that it
// trusts both the public CAs and Hoist. It is rewritten on every start.
func (ca *CA) WriteBundle(path string, roots []byte) error {
	// Roots read from an earlier bundle (Hoist's own SSL_CERT_FILE may
	// name it) already hold the CA: keep one copy.
	roots = bytes.ReplaceAll(roots, ca.CertPEM, nil)
	data := make([]byte, 0, len(roots)+len(ca.CertPEM)+1)
	data = append(data, roots...)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	data = append(data, ca.CertPEM...)
	return writeFileAtomic(path, data, 0o644)
}

// ParseCA decodes a CA certificate and its PKCS#8 key (PEM) and checks that
// they belong together and that the CA has not expired by now.
func ParseCA(certPEM, keyPEM []byte, now time.Time) (*CA, error) {
	ca, err := parseCA(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if !now.Before(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("the CA expired on %s", ca.Cert.NotAfter.Format(time.DateOnly))
	}
	return ca, nil
}
