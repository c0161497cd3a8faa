package sdkconn_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hoistgg/hoist/e2e/sdkclient"
	"github.com/hoistgg/hoist/internal/sdkconn"
)

// fakeIssuer gives token a short life and issues "fresh-N" tokens.
type fakeIssuer struct {
	mu     sync.Mutex
	life   time.Duration
	issued []string
	fail   bool
}

func (f *fakeIssuer) ComputeTokenExpiry(_ context.Context, tok string) (time.Time, error) {
	if tok != token {
		return time.Time{}, nil // the fresh tokens last as long as the compute
	}
	return time.Now().Add(f.life), nil
}

func (f *fakeIssuer) IssueComputeToken(_ context.Context, fleet, compute string) (string, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return "", time.Time{}, errors.New("compute gone")
	}
	if fleet != fleetID || compute != computeID {
		return "", time.Time{}, errors.New("wrong compute " + fleet + "/" + compute)
	}
	tok := "fresh-token-" + string(rune('a'+len(f.issued)))
	f.issued = append(f.issued, tok)
	return tok, time.Time{}, nil
}

// TestRefreshConnection: a connection whose token expires soon is sent
// RefreshConnection with a fresh token and this endpoint's URL; one whose
// credential does not expire is sent none (the fresh token's socket).
func TestRefreshConnection(t *testing.T) {
	iss := &fakeIssuer{life: 300 * time.Millisecond}
	e, logs := start(t, sdkconn.Config{Issuer: iss, RefreshBefore: time.Hour})
	got := make(chan *sdkclient.Frame, 4)
	c := dial(t, e, "proc-refresh", sdkclient.Options{OnMessage: func(_ *sdkclient.Client, f *sdkclient.Frame) { got <- f }})
	var f *sdkclient.Frame
	select {
	case f = <-got:
	case <-time.After(wait):
		t.Fatal("no RefreshConnection within the token's life")
	}
	var m struct {
		Action, RefreshConnectionEndpoint, AuthToken string
		StatusCode                                   int
	}
	if err := f.Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m.Action != "RefreshConnection" || m.StatusCode != 200 || m.AuthToken != "fresh-token-a" ||
		m.RefreshConnectionEndpoint != e.URL {
		t.Errorf("message %+v (endpoint %s)", m, e.URL)
	}
	if strings.Contains(logs.String(), "fresh-token") {
		t.Error("a token was logged")
	}
	c.Drop()
}
