package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	awsv2 "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// signedStreamRequest is a signed GET /hoist/events of key, as bytes to
// replay on any connection.
func signedStreamRequest(t *testing.T, base, key string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/hoist/events", nil)
	sum := sha256.Sum256(nil)
	creds := awsv2.Credentials{AccessKeyID: key, SecretAccessKey: "secret-" + key}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "gamelift", "us-west-2", time.Now()); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := req.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// replay sends raw on a new connection and returns the answer's status;
// the connection stays open (a stream) until the test ends or close.
func replay(t *testing.T, addr string, raw []byte) (int, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write(raw); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp.StatusCode, c
}

// TestEventStreamsCapped: one signed request replayed on 12 connections
// opens only the key's share of streams (a quarter of
// --max-event-streams, 2 of 8 here), the rest are refused 429; four keys
// fill the total and a fifth key is refused too; health and the API keep
// answering; a closed stream gives its place back. Before, every replay
// opened a stream (19,990 of them exhausted Hoist's files).
func TestEventStreamsCapped(t *testing.T) {
	var creds []string
	for i := range 5 {
		creds = append(creds, fmt.Sprintf("AKIDSTREAM%d:secret-AKIDSTREAM%d", i, i))
	}
	srv, ts := startWith(t, nil, map[string]string{"HOIST_CREDENTIALS": strings.Join(creds, ","), "HOIST_MAX_EVENT_STREAMS": "8"})
	ended := make(chan struct{}, 16)
	srv.onStreamEnd = func() { ended <- struct{}{} }
	addr := ts.Listener.Addr().String()
	raw := signedStreamRequest(t, ts.URL, "AKIDSTREAM0")
	var open []net.Conn
	statuses := map[int]int{}
	for range 12 {
		st, c := replay(t, addr, raw)
		statuses[st]++
		if st == http.StatusOK {
			open = append(open, c)
		}
	}
	if statuses[http.StatusOK] != 2 || statuses[http.StatusTooManyRequests] != 10 {
		t.Fatalf("12 replays of one key's stream: %v, want 2 open and 10 refused 429", statuses)
	}
	for i := 1; i < 4; i++ {
		raw := signedStreamRequest(t, ts.URL, fmt.Sprintf("AKIDSTREAM%d", i))
		for range 2 {
			if st, _ := replay(t, addr, raw); st != http.StatusOK {
				t.Fatalf("key %d: %d, want 200", i, st)
			}
		}
	}
	fifth := signedStreamRequest(t, ts.URL, "AKIDSTREAM4")
	if st, _ := replay(t, addr, fifth); st != http.StatusTooManyRequests {
		t.Fatalf("a fifth key with 8 streams open: %d, want 429", st)
	}
	if resp, err := http.Get(ts.URL + "/hoist/health"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health with every stream taken: %v %v", resp, err)
	}
	open[0].Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the closed stream did not end")
	}
	if st, _ := replay(t, addr, fifth); st != http.StatusOK {
		t.Fatalf("once a stream closed: %d, want 200", st)
	}
}

// TestLongConnectionLimit: the bound on long-lived connections keeps a
// quarter of the open-file limit, at least 128 files, for the rest.
func TestLongConnectionLimit(t *testing.T) {
	for _, c := range []struct {
		configured int
		files      uint64
		want       int
	}{
		{0, 1 << 20, 786432},
		{0, 1024, 768},
		{0, 256, 128},
		{0, 100, 1},
		{0, 0, 10_000},
		{500, 256, 500},
	} {
		if got := longConnectionLimit(c.configured, c.files); got != c.want {
			t.Errorf("longConnectionLimit(%d, %d) = %d, want %d", c.configured, c.files, got, c.want)
		}
	}
}
