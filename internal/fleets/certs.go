package fleets

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/hosting"
)

// Certificates of fleets with CertificateConfiguration GENERATED: as in
// GameLift, each fleet has one certificate, shared by all its instances on
// this machine. Hoist's one CA (Config.CA) signs it for the wildcard names
// of the fleet's locations, *.<location>.<DNSDomain> (the instances' DNS
// names are <instance ID>.<location>.<DNSDomain>), and the instance IP
// address. It is issued at CreateFleet and kept in
// <DataDir>/fleets/<fleet ID>/; it is issued again, for every location of
// the fleet, when an instance starts in a location it does not name or
// when it has less than a month left. Each instance gets a copy, written
// where GetComputeCertificate points.
//
// An instance on a pool host gets a certificate of its own instead, issued
// when it starts and kept by its host only: the same wildcard names, its
// host's address and DNS name where the CA's name constraints permit them
// (--host-networks), and never Hoist's own address, so that a host's key
// cannot pass for Hoist's machine.

// CertificateAuthority signs fleet certificates (*pki.CA).
type CertificateAuthority interface {
	// IssueLeaf returns a TLS server certificate for names (IP addresses
	// become IP SANs): the certificate followed by the CA certificate, and
	// the PKCS#8 private key.
	IssueLeaf(commonName string, names []string) (chainPEM, keyPEM []byte, err error)
}

// renewBefore is how long before its end a fleet certificate is replaced.
const renewBefore = 30 * 24 * time.Hour

// Names of a fleet certificate's files in the fleet's directory.
const (
	fleetChainFile = "certificateChain.pem"
	fleetKeyFile   = "privateKey.pem"
)

// fleetDir is the directory of a fleet's files ("" without a DataDir).
func (s *Service) fleetDir(fleetID string) string {
	if s.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(s.cfg.DataDir, "fleets", fleetID)
}

// dnsName is the DNS name of instance id of fleet f in location loc, after
// GameLift's patterns (<unique ID>.<region>.amazongamelift.com on
// TLS-enabled fleets, ec2-<IP>....compute.amazonaws.com on others).
func (s *Service) dnsName(f *fleetRec, id, loc, ip string) string {
	if generated(&f.Fleet) {
		return strings.ToLower(id + "." + loc + "." + s.cfg.DNSDomain)
	}
	return strings.ToLower("ec2-" + strings.NewReplacer(".", "-", ":", "-").Replace(ip) +
		"." + loc + ".compute." + s.cfg.DNSDomain)
}

// certNames are the names a fleet certificate covers for locations.
func (s *Service) certNames(locations []string) []string {
	names := make([]string, 0, len(locations)+1)
	for _, l := range locations {
		names = append(names, strings.ToLower("*."+l+"."+s.cfg.DNSDomain))
	}
	return append(names, s.cfg.InstanceIP)
}

func locationNames(f *hosting.Fleet) []string {
	out := make([]string, 0, len(f.Locations))
	for _, l := range f.Locations {
		out = append(out, l.Location)
	}
	return out
}

func (f *fleetRec) locationNames() []string { return locationNames(&f.Fleet) }

// fleetCertificate returns fleet fleetID's certificate files, issuing a new
// certificate when there is none, it lacks one of locations, or it ends
// within renewBefore.
func (s *Service) fleetCertificate(fleetID string, locations []string, now time.Time) (*CertificateFiles, error) {
	if s.cfg.CA == nil {
		return nil, errors.New("this Hoist has no certificate authority")
	}
	dir := s.fleetDir(fleetID)
	if dir == "" {
		return nil, errors.New("this Hoist has no data directory to keep certificates in")
	}
	s.certMu.Lock()
	defer s.certMu.Unlock()
	names := s.certNames(locations)
	if files, leaf, err := readFleetCertificate(dir); err == nil && covers(leaf, names) && now.Add(renewBefore).Before(leaf.NotAfter) {
		return files, nil
	}
	chain, key, err := s.cfg.CA.IssueLeaf(names[0], names)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// The key first: a chain without its key is never read.
	if err := writeAtomic(filepath.Join(dir, fleetKeyFile), key); err != nil {
		return nil, err
	}
	if err := writeAtomic(filepath.Join(dir, fleetChainFile), chain); err != nil {
		return nil, err
	}
	files, _, err := readFleetCertificate(dir)
	return files, err
}

// readFleetCertificate reads a fleet certificate's files.
func readFleetCertificate(dir string) (*CertificateFiles, *x509.Certificate, error) {
	chain, err := os.ReadFile(filepath.Join(dir, fleetChainFile))
	if err != nil {
		return nil, nil, err
	}
	key, err := os.ReadFile(filepath.Join(dir, fleetKeyFile))
	if err != nil {
		return nil, nil, err
	}
	leafBlock, rest := pem.Decode(chain)
	if leafBlock == nil {
		return nil, nil, errors.New("no certificate in " + fleetChainFile)
	}
	leaf, err := x509.ParseCertificate(leafBlock.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("fleet certificate: %w", err)
	}
	return &CertificateFiles{Certificate: pem.EncodeToMemory(leafBlock), Chain: chain, PrivateKey: key, Root: rest}, leaf, nil
}

// covers reports whether leaf names every entry of names.
func covers(leaf *x509.Certificate, names []string) bool {
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
				return false
			}
		} else if !slices.Contains(leaf.DNSNames, n) {
			return false
		}
	}
	return true
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// issueInstanceCertificate returns the certificate files of a starting
// instance: its fleet's certificate, or one of its own on a pool host,
// with what it names (req).
func (s *Service) issueInstanceCertificate(l launch) (files *CertificateFiles, req *CertificateRequest, err error) {
	locs := locationNames(&l.fleet)
	if !slices.Contains(locs, l.comp.Location) {
		locs = append(locs, l.comp.Location)
	}
	if s.onPoolHost(l) {
		req = &CertificateRequest{Locations: locs, IPAddress: l.comp.IPAddress, DNSName: l.hostDNS}
		files, err = s.hostCertificate(req.Locations, req.IPAddress, req.DNSName)
		return files, req, err
	}
	files, err = s.fleetCertificate(l.ref.FleetID, locs, s.cfg.Now())
	return files, nil, err
}

// hostCertificate issues the certificate of an instance on a pool host at
// ip (with DNS name dns, "" if none): the fleet's wildcard names for
// locations, and those of ip and dns the CA's name constraints permit.
func (s *Service) hostCertificate(locations []string, ip, dns string) (*CertificateFiles, error) {
	if s.cfg.CA == nil {
		return nil, errors.New("this Hoist has no certificate authority")
	}
	names := s.certNames(locations)
	names = names[:len(names)-1] // not Hoist's own address
	p, checks := s.cfg.CA.(interface{ Permits(string) bool })
	for _, n := range []string{ip, strings.ToLower(dns)} {
		switch {
		case n == "" || slices.Contains(names, n):
		case checks && !p.Permits(n):
			s.log.Warn("fleets: an instance's certificate leaves out its host's name: Hoist's CA may not sign it (see --host-networks)", "name", n)
		default:
			names = append(names, n)
		}
	}
	chain, key, err := s.cfg.CA.IssueLeaf(names[0], names)
	if err != nil {
		return nil, err
	}
	leafBlock, rest := pem.Decode(chain)
	if leafBlock == nil {
		return nil, errors.New("the CA issued no certificate")
	}
	return &CertificateFiles{Certificate: pem.EncodeToMemory(leafBlock), Chain: chain, PrivateKey: key, Root: rest}, nil
}
