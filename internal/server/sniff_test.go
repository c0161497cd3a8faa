package server

import (
	"bytes"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestSniffTLS sends TLS handshakes (as the C++ Server SDK does given a
// ws:// URL) and a plain request to an HTTP server behind SniffTLS: one
// warning naming the TLS listener, and plain HTTP keeps working.
func TestSniffTLS(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }),
		ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelWarn)}
	go hs.Serve(SniffTLS(ln, "127.0.0.1:9443", log))
	defer hs.Close()

	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if logs.String() != "" {
		t.Fatalf("plain HTTP logged %q", logs.String())
	}
	for range 2 {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			c.Close()
			t.Fatal("a TLS handshake with the plain port succeeded")
		}
	}
	// The warning is written in the Read that saw the handshake, before the
	// server answers it, so it is there once tls.Dial has returned.
	got := logs.String()
	if n := strings.Count(got, "TLS on the plain port"); n != 1 {
		t.Fatalf("logged %d warnings, want 1:\n%s", n, got)
	}
	if !strings.Contains(got, "wss://127.0.0.1:9443/sdk") {
		t.Errorf("the warning does not name the TLS listener:\n%s", got)
	}
}

// TestSDKEndpoint: wss:// on the TLS listener unless --sdk-scheme ws or the
// TLS listener is off.
func TestSDKEndpoint(t *testing.T) {
	for _, c := range []struct{ scheme, addr, tlsAddr, want string }{
		{"auto", "127.0.0.1:9080", "127.0.0.1:9443", "wss://127.0.0.1:9443/sdk"},
		{"", "127.0.0.1:9080", "127.0.0.1:9443", "wss://127.0.0.1:9443/sdk"},
		{"wss", "127.0.0.1:9080", "0.0.0.0:9443", "wss://10.0.0.5:9443/sdk"},
		{"ws", "127.0.0.1:9080", "127.0.0.1:9443", "ws://127.0.0.1:9080/sdk"},
		{"auto", "127.0.0.1:9080", "", "ws://127.0.0.1:9080/sdk"},
	} {
		ip := "127.0.0.1"
		if strings.HasPrefix(c.tlsAddr, "0.0.0.0") {
			ip = "10.0.0.5"
		}
		if got := sdkEndpoint(c.scheme, c.addr, c.tlsAddr, ip); got != c.want {
			t.Errorf("sdkEndpoint(%q, %q, %q) = %q, want %q", c.scheme, c.addr, c.tlsAddr, got, c.want)
		}
	}
}
