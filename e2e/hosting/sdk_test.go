//go:build linux

package hosting

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gl "github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"

	"github.com/hoistgg/hoist/e2e/hoisttest"
	"github.com/hoistgg/hoist/e2e/sdkclient"
)

// instanceCredentials returns what Hoist gave the server processes of a
// managed fleet's only instance: the SDK endpoint, auth token and instance
// ID, the process ID of one of them and the CA bundle (SSL_CERT_FILE), read
// from a running process's environment.
func instanceCredentials(t *testing.T, fleetID string) (endpoint, token, instance, processID, caFile string) {
	t.Helper()
	pids := fleetPIDs(fleetID)
	if len(pids) == 0 {
		t.Fatalf("fleet %s runs no process", fleetID)
	}
	env := processEnv(pids[0])
	endpoint, token, instance = env["GAMELIFT_SDK_WEBSOCKET_URL"], env["GAMELIFT_SDK_AUTH_TOKEN"], env["GAMELIFT_SDK_HOST_ID"]
	processID = env["GAMELIFT_SDK_PROCESS_ID"]
	if endpoint == "" || token == "" || instance == "" || processID == "" {
		t.Fatalf("process %d lacks the SDK environment: %v", pids[0], env)
	}
	return endpoint, token, instance, processID, env["SSL_CERT_FILE"]
}

// dialSDK connects to the SDK endpoint as the Go SDK does; for wss it
// trusts the certificates in caFile ("": the system roots only).
func dialSDK(t *testing.T, caFile, endpoint, processID, host, fleetID, token string) (*sdkclient.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitShort)
	defer cancel()
	var opts sdkclient.Options
	if caFile != "" {
		data, err := os.ReadFile(caFile)
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(data) {
			t.Fatalf("%s holds no certificate", caFile)
		}
		opts.HTTPClient = &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}}}}
	}
	c, err := sdkclient.Dial(ctx, endpoint, sdkclient.Query(processID, host, fleetID, token), opts)
	if err == nil {
		t.Cleanup(func() { c.Close(1000, "") })
	}
	return c, err
}

// testBadToken: the SDK endpoint refuses a handshake (HTTP 403, no
// upgrade) without a valid token for the fleet and compute it names, and,
// with a valid token of an EC2 instance, for a process ID Hoist did not
// launch on that instance.
func testBadToken(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "tokens")
	fleetID := e.newFleet(t, fleetSpec{name: "tokens", build: buildID})
	endpoint, token, instance, processID, caFile := instanceCredentials(t, fleetID)
	other := "0000000000000000000000000000000000000000000000000000000000000000"
	for name, q := range map[string][4]string{ // host, fleet, token
		"unknown token":   {instance, fleetID, other},
		"no token":        {instance, fleetID, ""},
		"another fleet":   {instance, "fleet-00000000-0000-0000-0000-000000000000", token},
		"another compute": {"i-00000000000000000", fleetID, token},
		// A valid token, but a process ID Hoist did not launch there.
		"foreign process ID": {instance, fleetID, token},
	} {
		_, err := dialSDK(t, caFile, endpoint, "intruder", q[0], q[1], q[2])
		var he *sdkclient.HandshakeError
		if !errors.As(err, &he) || he.StatusCode != http.StatusForbidden {
			t.Errorf("%s: handshake answered %v, want HTTP 403", name, err)
		}
	}
	// A wrong token does not disturb the processes; the right one works
	// for a process Hoist launched (as the SDK reconnects).
	c, err := dialSDK(t, caFile, endpoint, processID, instance, fleetID, token)
	if err != nil {
		t.Fatalf("handshake with the instance's token: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitShort)
	defer cancel()
	_, err = c.Call(ctx, "GetComputeCertificate", nil)
	var se *sdkclient.StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 {
		t.Errorf("GetComputeCertificate on a fleet without certificates: %v, want status 400", err)
	}
	e.waitIdleProcesses(t, fleetID, 1)
	e.deleteFleet(t, fleetID)
}

// testCertificates: a fleet with GENERATED certificates gives each instance
// a certificate for its DNS name, which game sessions report; a process
// finds it with GetComputeCertificate.
func testCertificates(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "certs")
	fleetID := e.newFleet(t, fleetSpec{name: "certs", build: buildID, cert: types.CertificateTypeGenerated})
	attrs, err := e.gl.DescribeFleetAttributes(e.ctx, &gl.DescribeFleetAttributesInput{FleetIds: []string{fleetID}})
	if err != nil || attrs.FleetAttributes[0].CertificateConfiguration == nil ||
		attrs.FleetAttributes[0].CertificateConfiguration.CertificateType != types.CertificateTypeGenerated {
		t.Fatalf("DescribeFleetAttributes CertificateConfiguration: %+v, %v", attrs, err)
	}
	gs := e.createGameSession(t, fleetID, 2)
	dns := aws.ToString(gs.DnsName)
	if dns == "" {
		t.Fatalf("game session on a TLS fleet has no DnsName")
	}

	endpoint, token, instance, processID, caFile := instanceCredentials(t, fleetID)
	c, err := dialSDK(t, caFile, endpoint, processID, instance, fleetID, token)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitShort)
	defer cancel()
	f, err := c.Call(ctx, "GetComputeCertificate", nil)
	if err != nil {
		t.Fatalf("GetComputeCertificate: %v", err)
	}
	var reply struct{ CertificatePath, ComputeName string }
	if err := f.Decode(&reply); err != nil || reply.CertificatePath == "" || reply.ComputeName != instance {
		t.Fatalf("GetComputeCertificate answered %s", f.Raw)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(reply.CertificatePath, name))
		if err != nil {
			t.Fatalf("certificate file: %v", err)
		}
		return b
	}
	leaf := parseCert(t, read("certificate.pem"))
	for _, name := range []string{"certificateChain.pem", "privateKey.pem"} {
		if len(read(name)) == 0 {
			t.Errorf("%s is empty", name)
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(read("rootCertificate.pem")) {
		t.Fatal("rootCertificate.pem holds no certificate")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: dns, Roots: roots, CurrentTime: time.Now()}); err != nil {
		t.Errorf("the instance certificate does not verify for the game session's DnsName %s: %v", dns, err)
	}
	if !slices.Contains(leaf.DNSNames, dns) && !slices.Contains(leaf.DNSNames, "*."+hoisttest.Region+".hoist.localhost") {
		t.Errorf("certificate names %v, not %s", leaf.DNSNames, dns)
	}
	// GameLift's pattern for TLS fleets, <instance>.<region>.<domain>, under
	// --dns-suffix (default hoist.localhost); the compute reports the same.
	if want := instance + "." + hoisttest.Region + ".hoist.localhost"; dns != want {
		t.Errorf("game session DnsName %q, want %q", dns, want)
	}
	dc, err := e.gl.DescribeCompute(e.ctx, &gl.DescribeComputeInput{FleetId: aws.String(fleetID), ComputeName: aws.String(instance)})
	if err != nil || aws.ToString(dc.Compute.DnsName) != dns {
		t.Errorf("DescribeCompute DnsName: %+v, %v; want %s", dc, err, dns)
	}
	// The fleet's certificate comes from Hoist's one CA.
	if ca, err := os.ReadFile(filepath.Join(e.h.DataDir, "pki", "ca.pem")); err != nil || !bytes.Equal(ca, read("rootCertificate.pem")) {
		t.Errorf("rootCertificate.pem is not Hoist's CA (%v)", err)
	}
	e.deleteFleet(t, fleetID)
}

func parseCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatal("no PEM certificate")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testForceTLS runs, on a managed fleet, a game server that speaks only
// TLS whatever the URL's scheme, as the official C++ Server SDK does: Hoist
// hands it a wss:// URL and a CA bundle (SSL_CERT_FILE) it trusts.
func testForceTLS(t *testing.T, e *env) {
	buildID := e.uploadGameServer(t, "force-tls")
	fleetID := e.newFleet(t, fleetSpec{name: "force-tls", build: buildID, params: "-force-tls"})
	endpoint, _, _, _, caFile := instanceCredentials(t, fleetID)
	if want := "wss" + strings.TrimPrefix(e.h.TLSURL, "https") + "/sdk"; endpoint != want {
		t.Errorf("GAMELIFT_SDK_WEBSOCKET_URL %q, want %q", endpoint, want)
	}
	// Hoist's CA bundle, as hoist serve writes it (--local-hosting
	// in-process) or as its local agent does (agent, the default).
	if want, agents := filepath.Join(e.h.DataDir, "ca-bundle.pem"), filepath.Join(e.h.DataDir, "local-host", "ca-bundle.pem"); caFile != want && caFile != agents {
		t.Errorf("SSL_CERT_FILE %q, want %q or %q", caFile, want, agents)
	}
	gs := e.createGameSession(t, fleetID, 2)
	e.waitGameSession(t, aws.ToString(gs.GameSessionId), types.GameSessionStatusActive)
	e.deleteFleet(t, fleetID)
}
