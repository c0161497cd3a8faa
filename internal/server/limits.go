package server

import (
	"io"
	"log"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/config"
)

// Limits of the HTTP front door (docs/security.md, "Requests"): how long
// a client may take to send its headers and its body, how long an idle
// keep-alive connection stays open, and how many request bodies are read
// into memory at once.

// maxHeaderBytes bounds a request's headers (Go's default is 1 MB; the
// largest Authorization header Hoist parses is 16 KiB).
const maxHeaderBytes = 64 << 10

// bodySlotWait is how long a request waits for one of the body slots
// before it is answered 503.
const bodySlotWait = time.Second

// HTTPServer returns the http.Server to serve Handler with, on any
// listener (the caller sets TLSConfig for the TLS one): the header and
// idle timeouts of the configuration, a header size bound, errorLog for
// the server's own errors. The body timeout and the cap on bodies read at
// once are part of Handler, so they hold on any server.
//
// No ReadTimeout or WriteTimeout: they would also end the SDK's WebSocket
// connections (hijacked, long-lived) and long downloads; the body read
// deadline Handler sets covers what ReadTimeout would.
func (s *Server) HTTPServer(errorLog *log.Logger) *http.Server {
	hs := HTTPServer(s.cfg, s.handler, errorLog)
	hs.RegisterOnShutdown(s.EndStreams)
	return hs
}

// HTTPServer returns an http.Server for handler with the header and idle
// timeouts and the header size limit cfg sets (for a listener that serves
// before the Server exists: the Starting handler).
func HTTPServer(cfg *config.Config, handler http.Handler, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: cfg.HTTPHeaderTimeout,
		IdleTimeout:       cfg.HTTPIdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          errorLog,
	}
}

// bodyLimits bounds request bodies: a read deadline, and a cap on the
// bodies of the API and admin routes (which are read whole into memory)
// being read at once.
type bodyLimits struct {
	timeout time.Duration // 0: none
	slots   chan struct{} // nil: no cap
	wait    time.Duration
	// streamed reports whether a request's body streams to disk (S3
	// uploads, up to 5 GiB): its deadline is an idle one, renewed by
	// every read, and it takes no slot.
	streamed func(*http.Request) bool
}

func newBodyLimits(timeout time.Duration, maxBodies int, streamed func(*http.Request) bool) *bodyLimits {
	l := &bodyLimits{timeout: timeout, wait: bodySlotWait, streamed: streamed}
	if maxBodies > 0 {
		l.slots = make(chan struct{}, maxBodies)
	}
	return l
}

func (l *bodyLimits) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		b := &limitedBody{ReadCloser: r.Body, l: l, rc: http.NewResponseController(w), idle: l.streamed(r)}
		if l.timeout > 0 {
			_ = b.rc.SetReadDeadline(time.Now().Add(l.timeout))
		}
		defer b.finish()
		// A shallow copy, as Request.WithContext makes: net/http keeps
		// seeing its own body, so after a handler that refused a request
		// unread it answers at once and closes the connection rather
		// than first reading what is left.
		r2 := *r
		r2.Body = b
		next.ServeHTTP(w, &r2)
	})
}

// limitedBody is a request body under bodyLimits. It takes a slot at its
// first read and gives it back at its end (EOF, an error, Close, or the
// end of the request).
type limitedBody struct {
	io.ReadCloser
	l    *bodyLimits
	rc   *http.ResponseController
	idle bool // a streamed body: idle deadline, no slot

	held     bool
	done     bool
	finished sync.Once
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	if !b.held && !b.idle && b.l.slots != nil {
		t := time.NewTimer(b.l.wait)
		select {
		case b.l.slots <- struct{}{}:
			t.Stop()
			b.held = true
		case <-t.C:
			return 0, errBusy
		}
	}
	n, err := b.ReadCloser.Read(p)
	if n > 0 && b.idle && b.l.timeout > 0 {
		_ = b.rc.SetReadDeadline(time.Now().Add(b.l.timeout))
	}
	if err != nil {
		b.finish()
		if err == io.EOF {
			b.done = true
			// The body is in: the connection's next read is the next
			// request's, whose deadlines net/http sets.
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}

func (b *limitedBody) Close() error {
	b.finish()
	return b.ReadCloser.Close()
}

func (b *limitedBody) finish() {
	b.finished.Do(func() {
		if b.held {
			<-b.l.slots
		}
	})
}

// errBusy answers a request whose body found no free slot in time. It has
// the method set of api.Error, so the API answers it in its protocol's
// form; SDKs retry a 503.
var errBusy = &busyError{}

type busyError struct{}

func (*busyError) Error() string     { return "ThrottlingException: " + busyMessage }
func (*busyError) ErrorCode() string { return "ThrottlingException" }
func (*busyError) ErrorMessage() string {
	return busyMessage
}
func (*busyError) HTTPStatus() int { return http.StatusServiceUnavailable }

const busyMessage = "Hoist is reading as many request bodies as --http-max-bodies allows; retry shortly"

// isS3 reports whether r is for the S3 upload routes of bucket.
func isS3(bucket string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		p := r.URL.Path
		return strings.HasPrefix(p, "/"+bucket) && (len(p) == len(bucket)+1 || p[len(bucket)+1] == '/')
	}
}
