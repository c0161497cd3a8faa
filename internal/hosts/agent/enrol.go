package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/pki"
)

// State is what enrolment gave the host, kept in its state directory
// (host.json, mode 0600) so that the agent reconnects after a restart
// without enrolling again.
type State struct {
	Endpoint   string `json:"endpoint"`
	HostID     string `json:"hostId"`
	HostSecret string `json:"hostSecret"`
	Pool       string `json:"pool"`
	Location   string `json:"location"`
	Address    string `json:"address"`
}

// Files of the state directory.
const (
	stateFile  = "host.json"
	caFile     = "ca.pem"
	bundleFile = "ca-bundle.pem"
)

// LoadState reads the state directory's host.json (nil, nil when there is
// none).
func LoadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	st := new(State)
	if err := json.Unmarshal(b, st); err != nil || st.HostID == "" || st.HostSecret == "" {
		return nil, fmt.Errorf("%s is damaged: remove it to enrol again", filepath.Join(dir, stateFile))
	}
	return st, nil
}

// SaveState writes host.json (0600) and the CA certificate (hoist serve
// does for the local agent, which does not enrol).
func SaveState(dir string, st *State, caPEM []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil { // a local agent's is 0711 (hoist serve makes it)
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, caFile), caPEM, 0o644); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, stateFile), b, 0o600)
}

// writeFile writes a file atomically with mode perm.
func writeFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Chmod(tmp, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// pinnedTLS trusts a server whose chain holds the CA certificate with the
// given pin (hostproto.CAPin), and checks the server's certificate against
// that CA and the name dialed: the agent needs nothing but the enrolment
// token to trust Hoist before it sends the token.
func pinnedTLS(pin string) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // replaced by VerifyConnection below
		VerifyConnection: func(cs tls.ConnectionState) error {
			var ca *x509.Certificate
			for _, c := range cs.PeerCertificates {
				if hostproto.CAPin(c.Raw) == pin {
					ca = c
				}
			}
			if ca == nil || len(cs.PeerCertificates) == 0 {
				return errors.New("the server's certificate chain holds no CA with the enrolment token's pin: this is not the Hoist that made the token")
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca)
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: cs.ServerName})
			return err
		},
	}
}

// poolTLS trusts the CA certificates of a PEM file.
func poolTLS(caPEM []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no CA certificate in the PEM given")
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}, nil
}

// enrol enrols the host with Hoist and returns its state and Hoist's CA
// certificate.
func (a *Agent) enrol(ctx context.Context) (*State, []byte, error) {
	tok, err := hostproto.ParseEnrolmentToken(a.cfg.Token)
	if err != nil {
		return nil, nil, fmt.Errorf("--enrolment-token: %w", err)
	}
	tlsCfg := pinnedTLS(tok.CAPin)
	if a.cfg.CAFile != "" {
		pemData, err := os.ReadFile(a.cfg.CAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--ca-file: %w", err)
		}
		if tlsCfg, err = poolTLS(pemData); err != nil {
			return nil, nil, fmt.Errorf("--ca-file: %w", err)
		}
	}
	req := hostproto.EnrolRequest{Token: tok.String(), Pool: a.cfg.Pool, Location: a.cfg.Location,
		Address: a.cfg.Address, DnsName: a.cfg.DNSName, Instances: a.cfg.Instances, Hostname: hostname()}
	body, _ := json.Marshal(req)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg, Proxy: nil}}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url(hostproto.PathEnrol), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, nil, fmt.Errorf("enrolling with %s: %w", a.cfg.Endpoint, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("the enrolment was refused (%s): %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var out hostproto.EnrolReply
	if err := json.Unmarshal(b, &out); err != nil || out.HostId == "" || out.HostSecret == "" {
		return nil, nil, errors.New("the enrolment reply is not valid")
	}
	blk, _ := pem.Decode([]byte(out.CACertificate))
	if blk == nil || (a.cfg.CAFile == "" && hostproto.CAPin(blk.Bytes) != tok.CAPin) {
		return nil, nil, errors.New("the CA certificate Hoist sent does not match the enrolment token's pin")
	}
	st := &State{Endpoint: a.cfg.Endpoint, HostID: out.HostId, HostSecret: out.HostSecret, Pool: a.cfg.Pool,
		Location: a.cfg.Location, Address: a.cfg.Address}
	return st, []byte(out.CACertificate), nil
}

// writeBundle writes the CA bundle server processes get as SSL_CERT_FILE:
// the system's roots and Hoist's CA (mode 0644: the processes' accounts
// read it).
func writeBundle(dir string, caPEM []byte) (string, error) {
	path := filepath.Join(dir, bundleFile)
	ca := &pki.CA{CertPEM: caPEM}
	return path, ca.WriteBundle(path, pki.SystemRootsPEM(os.Getenv))
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
