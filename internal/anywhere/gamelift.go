package anywhere

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/gamelift"
	"github.com/aws/aws-sdk-go-v2/service/gamelift/types"
)

// glClient is what the agent calls of the GameLift API.
type glClient interface {
	registerCompute(ctx context.Context, cfg Config) (computeEndpoints, error)
	getComputeAuthToken(ctx context.Context, fleetID, computeName string) (string, time.Time, error)
	deregisterCompute(ctx context.Context, fleetID, computeName string) error
}

// computeEndpoints are the URLs of a registered compute.
type computeEndpoints struct{ sdkEndpoint, agentEndpoint *string }

// sdkClient calls the API with aws-sdk-go-v2.
type sdkClient struct{ c *gamelift.Client }

// newGameLift returns a client of the API at endpoint, signing with the
// credentials of awsCfg.
func newGameLift(awsCfg aws.Config, endpoint string, httpClient *http.Client) glClient {
	return sdkClient{gamelift.NewFromConfig(awsCfg, func(o *gamelift.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.HTTPClient = httpClient
	})}
}

// registerCompute registers this host as the compute.
func (s sdkClient) registerCompute(ctx context.Context, cfg Config) (computeEndpoints, error) {
	in := &gamelift.RegisterComputeInput{FleetId: aws.String(cfg.FleetID), ComputeName: aws.String(cfg.ComputeName),
		Location: aws.String(cfg.Location), IpAddress: aws.String(cfg.IPAddress)}
	if cfg.DNSName != "" {
		in.DnsName = aws.String(cfg.DNSName)
	}
	out, err := s.c.RegisterCompute(ctx, in)
	if err != nil {
		return computeEndpoints{}, classify(err)
	}
	return computeEndpoints{out.Compute.GameLiftServiceSdkEndpoint, out.Compute.GameLiftAgentEndpoint}, nil
}

// getComputeAuthToken gets a compute auth token and when it expires.
func (s sdkClient) getComputeAuthToken(ctx context.Context, fleetID, computeName string) (string, time.Time, error) {
	out, err := s.c.GetComputeAuthToken(ctx, &gamelift.GetComputeAuthTokenInput{FleetId: aws.String(fleetID),
		ComputeName: aws.String(computeName)})
	if err != nil {
		return "", time.Time{}, classify(err)
	}
	return aws.ToString(out.AuthToken), aws.ToTime(out.ExpirationTimestamp), nil
}

// deregisterCompute deregisters the compute.
func (s sdkClient) deregisterCompute(ctx context.Context, fleetID, computeName string) error {
	_, err := s.c.DeregisterCompute(ctx, &gamelift.DeregisterComputeInput{FleetId: aws.String(fleetID),
		ComputeName: aws.String(computeName)})
	return classify(err)
}

// notFound is a NotFoundException of the API.
type notFound struct{ err error }

// Error returns the API's error text.
func (e *notFound) Error() string { return e.err.Error() }

// Unwrap returns the API's error.
func (e *notFound) Unwrap() error { return e.err }

// permanentError is an error retrying cannot cure.
type permanentError struct{ err error }

// Error returns the error's text.
func (e *permanentError) Error() string { return e.err.Error() }

// Unwrap returns the error.
func (e *permanentError) Unwrap() error { return e.err }

// permanent marks err as one retry cannot cure.
func permanent(err error) error { return &permanentError{err} }

// classify marks the API's errors: NotFoundException, and those a retry
// cannot cure (InvalidRequest, Unauthorized, Conflict, a refused
// signature), as the Java agent's retry condition does.
func classify(err error) error {
	var nf *types.NotFoundException
	var ir *types.InvalidRequestException
	var ua *types.UnauthorizedException
	var cf *types.ConflictException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return &notFound{err}
	case errors.As(err, &ir), errors.As(err, &ua), errors.As(err, &cf):
		return permanent(err)
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && (re.HTTPStatusCode() == http.StatusForbidden || re.HTTPStatusCode() == http.StatusUnauthorized) {
		return permanent(err)
	}
	return err
}

// retry runs fn up to attempts times, with exponential backoff (0.5 s,
// doubling, at most 15 s, ±25 %), until it succeeds, fails permanently
// or ctx ends.
func retry(ctx context.Context, log *slog.Logger, what string, attempts int, fn func() error) error {
	var err error
	for i := range attempts {
		if err = fn(); err == nil {
			return nil
		}
		var pe *permanentError
		if errors.As(err, &pe) || i == attempts-1 {
			break
		}
		wait := backoff(i)
		log.Info("agent: "+what+" failed; retrying", "attempt", i+1, "in", wait, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (after: %v)", what, ctx.Err(), err)
		case <-time.After(wait):
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// backoff is the wait after the (attempt+1)-th failure.
func backoff(attempt int) time.Duration {
	d := min(500*time.Millisecond<<min(attempt, 10), 15*time.Second)
	return time.Duration(float64(d) * (0.75 + rand.Float64()/2))
}

// tlsClient is the HTTP client of the API and the agent endpoint: the
// system's roots, and caFile's certificates when given.
func tlsClient(caFile string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: time.Minute}, nil
}

// tokenSource caches the compute's auth token and gets a new one 15
// minutes before it expires (at most half its life before), as the Java
// agent's ComputeAuthTokenManager does.
type tokenSource struct {
	gl                   glClient
	fleetID, computeName string
	now                  func() time.Time

	mu      chan struct{} // a one-slot lock that a context can give up on
	token   string
	expires time.Time
	issued  time.Time
}

// refreshBefore is how long before its expiry a token is replaced.
const refreshBefore = 15 * time.Minute

// get returns a token good for a while yet.
func (t *tokenSource) get(ctx context.Context) (string, error) {
	if t.mu == nil {
		return "", errors.New("anywhere: tokenSource not initialized")
	}
	select {
	case t.mu <- struct{}{}:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	defer func() { <-t.mu }()
	now := t.now()
	if t.token != "" && now.Before(t.expires.Add(-min(refreshBefore, t.expires.Sub(t.issued)/2))) {
		return t.token, nil
	}
	err := retry(ctx, slog.New(slog.DiscardHandler), "GetComputeAuthToken", 16, func() error {
		tok, exp, err := t.gl.getComputeAuthToken(ctx, t.fleetID, t.computeName)
		if err == nil {
			t.token, t.expires, t.issued = tok, exp, now
		}
		return err
	})
	return t.token, err
}
