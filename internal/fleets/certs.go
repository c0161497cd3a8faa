package fleets

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certificates of fleets with CertificateConfiguration GENERATED: each
// fleet gets its own certificate authority when it is created (its
// certificate in the Fleet record, its key in <DataDir>/fleets/<fleet
// ID>/ca-key.pem), and each instance a certificate from it for its DNS name
// and IP address, written where GetComputeCertificate points.

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 397 * 24 * time.Hour // as long as public TLS certificates may last
)

// fleetDir is the directory of a fleet's files ("" without a DataDir).
func (s *Service) fleetDir(fleetID string) string {
	if s.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(s.cfg.DataDir, "fleets", fleetID)
}

func (s *Service) caKeyFile(fleetID string) string {
	return filepath.Join(s.fleetDir(fleetID), "ca-key.pem")
}

// createFleetCA makes a fleet's certificate authority: it writes the key to
// the fleet's directory and returns the certificate's PEM.
func (s *Service) createFleetCA(fleetID string, now time.Time) (string, error) {
	if s.cfg.DataDir == "" {
		return "", errors.New("this Hoist has no data directory to keep certificate authorities in")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"Hoist"}, CommonName: "Hoist fleet " + fleetID + " CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", err
	}
	keyPEM, err := keyToPEM(key)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(s.fleetDir(fleetID), 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(s.caKeyFile(fleetID), keyPEM, 0o600); err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), nil
}

// issueInstanceCertificate issues an instance's certificate from its
// fleet's certificate authority.
func (s *Service) issueInstanceCertificate(l launch) (*CertificateFiles, error) {
	caBlock, _ := pem.Decode([]byte(l.fleet.CA))
	if caBlock == nil {
		return nil, errors.New("the fleet has no certificate authority")
	}
	ca, err := x509.ParseCertificate(caBlock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("fleet certificate authority: %w", err)
	}
	caKey, err := readKey(s.caKeyFile(l.ref.FleetID))
	if err != nil {
		return nil, fmt.Errorf("fleet certificate authority key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"Hoist"}, CommonName: l.comp.DNSName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(leafValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{l.comp.DNSName},
	}
	if ip := net.ParseIP(l.comp.IPAddress); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyToPEM(key)
	if err != nil {
		return nil, err
	}
	leaf := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	root := []byte(l.fleet.CA)
	return &CertificateFiles{Certificate: leaf, Chain: append(append([]byte{}, leaf...), root...),
		PrivateKey: keyPEM, Root: root}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic("fleets: no randomness: " + err.Error())
	}
	return n
}

func keyToPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func readKey(file string) (*ecdsa.PrivateKey, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("no PEM block")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("not an ECDSA key")
	}
	return ek, nil
}
