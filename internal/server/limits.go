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

// bodyLimits bounds request bodies: a read deadline, and caps on the
// bodies of the API and admin routes (which are read whole into memory)
// being read at once: their number, and their bytes.
type bodyLimits struct {
	timeout time.Duration // 0: none
	slots   chan struct{} // nil: no cap
	budget  *byteBudget   // nil: no cap
	wait    time.Duration
	// streamed reports whether a request's body streams to disk (S3
	// uploads, up to 5 GiB): its deadline is an idle one, renewed by
	// every read, and it takes no slot and no bytes.
	streamed func(*http.Request) bool
}

// bodyChunk is the most one read of a body of unknown length (chunked)
// takes from the byte budget: it is taken as it is read.
const bodyChunk = 64 << 10

func newBodyLimits(timeout time.Duration, maxBodies int, maxBytes int64, streamed func(*http.Request) bool) *bodyLimits {
	l := &bodyLimits{timeout: timeout, wait: bodySlotWait, streamed: streamed}
	if maxBodies > 0 {
		l.slots = make(chan struct{}, maxBodies)
	}
	if maxBytes > 0 {
		l.budget = newByteBudget(maxBytes)
	}
	return l
}

func (l *bodyLimits) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		b := &limitedBody{ReadCloser: r.Body, l: l, rc: http.NewResponseController(w), idle: l.streamed(r), length: r.ContentLength}
		if l.timeout > 0 {
			_ = b.rc.SetReadDeadline(time.Now().Add(l.timeout))
		}
		defer b.end()
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
// first read and gives it back at the end of its reading (EOF, an error,
// Close, or the end of the request). It takes bytes from the budget
// before reading them (a body of known length all of them at its first
// read; one of unknown length what each read brings, at most bodyChunk)
// and gives them back at the end of the request, when the handler no
// longer holds what it read.
type limitedBody struct {
	io.ReadCloser
	l      *bodyLimits
	rc     *http.ResponseController
	idle   bool  // a streamed body: idle deadline, no slot, no bytes
	length int64 // Content-Length; -1: unknown

	held     bool
	done     bool
	read     int64 // bytes read so far
	reserved int64 // bytes taken from the budget
	finished sync.Once
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	if !b.idle {
		var err error
		if p, err = b.reserve(p); err != nil {
			return 0, err
		}
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
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

// reserve takes, before a read into p, a slot and the bytes the read may
// bring, and returns p cut to what was taken.
func (b *limitedBody) reserve(p []byte) ([]byte, error) {
	if !b.held && b.l.slots != nil {
		t := time.NewTimer(b.l.wait)
		select {
		case b.l.slots <- struct{}{}:
			t.Stop()
			b.held = true
		case <-t.C:
			return nil, errBusy
		}
	}
	if b.l.budget == nil {
		return p, nil
	}
	want := b.length // the body reader returns no more than its length
	if want < 0 {
		p = p[:min(len(p), bodyChunk)]
		want = b.read + int64(len(p))
	}
	if need := want - b.reserved; need > 0 {
		if want > b.l.budget.total {
			return nil, errBodyTooLarge
		}
		if !b.l.budget.take(need, b.l.wait) {
			return nil, errBusyBytes
		}
		b.reserved += need
	}
	return p, nil
}

func (b *limitedBody) Close() error {
	b.finish()
	return b.ReadCloser.Close()
}

// finish gives back the slot once the body is read (or will not be).
func (b *limitedBody) finish() {
	b.finished.Do(func() {
		if b.held {
			<-b.l.slots
		}
	})
}

// end gives back everything at the end of the request.
func (b *limitedBody) end() {
	b.finish()
	if b.reserved > 0 {
		b.l.budget.give(b.reserved)
		b.reserved = 0
	}
}

// errBusy and errBusyBytes answer a request whose body found no free
// slot, or not enough free bytes, in time; errBodyTooLarge one whose body
// is larger than all the bytes bodies may hold at once. They have the
// method set of api.Error, so the API answers them in its protocol's
// form; SDKs retry a 503.
var (
	errBusy         = &limitError{code: "ThrottlingException", status: http.StatusServiceUnavailable, msg: busyMessage}
	errBusyBytes    = &limitError{code: "ThrottlingException", status: http.StatusServiceUnavailable, msg: busyBytesMessage}
	errBodyTooLarge = &limitError{code: "RequestEntityTooLargeException", status: http.StatusRequestEntityTooLarge, msg: tooLargeMessage}
)

// limitError is an answer of bodyLimits.
type limitError struct {
	code, msg string
	status    int
}

func (e *limitError) Error() string        { return e.code + ": " + e.msg }
func (e *limitError) ErrorCode() string    { return e.code }
func (e *limitError) ErrorMessage() string { return e.msg }
func (e *limitError) HTTPStatus() int      { return e.status }

const (
	busyMessage      = "Hoist is reading as many request bodies as --http-max-bodies allows; retry shortly"
	busyBytesMessage = "Hoist is reading as many bytes of request bodies as --http-body-memory allows; retry shortly"
	tooLargeMessage  = "the request body is larger than --http-body-memory, the bytes of bodies Hoist reads at once"
)

// isS3 reports whether r is for the S3 upload routes of bucket.
func isS3(bucket string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		p := r.URL.Path
		return strings.HasPrefix(p, "/"+bucket) && (len(p) == len(bucket)+1 || p[len(bucket)+1] == '/')
	}
}
