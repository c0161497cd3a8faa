package protocol

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/ids"
)

// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes is 0.
// The largest GameLift input is CreateScript/UpdateScript with a ZipFile of up
// to 5 MB, which base64 in JSON makes about 6.7 MB.
const DefaultMaxBodyBytes = 10 << 20

// Authenticator checks a request before its operation runs. It gets the
// whole body (SigV4 signs its hash), which is valid only during the call and
// must not be retained, and returns the context the operation runs with. An
// error that implements api.Error is answered with its code, message and
// status; any other error is logged and answered as an internal error.
type Authenticator interface {
	Authenticate(r *http.Request, body []byte) (context.Context, error)
}

// Prechecker is implemented by an Authenticator that can refuse a request
// from its headers alone. The handler calls Precheck before it reads the
// body, so that a request without a usable signature is answered without
// its body being read; Authenticate still follows for the rest.
type Prechecker interface {
	Precheck(r *http.Request) error
}

// Options configure the handler. The zero value serves without
// authentication, logs to slog.Default, bounds bodies to
// DefaultMaxBodyBytes and makes random UUIDs as request IDs.
type Options struct {
	// Auth authenticates every request; nil skips authentication.
	Auth Authenticator
	// Logger receives internal errors and recovered panics (at Error) and
	// client errors (at Debug). Request bodies are never logged.
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body (413 beyond it).
	MaxBodyBytes int64
	// RequestID returns the ID of a new request, sent as x-amzn-RequestId.
	RequestID func() string
	// Observe, when set, is told of every request once it is answered:
	// its operation ("" when it named none the model has), its error
	// code ("" for success) and how long it took (for metrics).
	Observe func(operation, errorCode string, d time.Duration)
}

// handler serves both protocols.
type handler struct {
	svc     api.Service
	auth    Authenticator
	log     *slog.Logger
	maxBody int64
	newID   func() string
	observe func(operation, errorCode string, d time.Duration)
}

// NewHandler returns an http.Handler serving svc over AWS JSON 1.1 (POST /)
// and Smithy RPC v2 CBOR (POST /service/GameLift/operation/<Operation>).
// Every other path is answered 404 in the protocol's error form.
func NewHandler(svc api.Service, opts Options) http.Handler {
	h := &handler{svc: svc, auth: opts.Auth, log: opts.Logger, maxBody: opts.MaxBodyBytes, newID: opts.RequestID,
		observe: opts.Observe}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.newID == nil {
		h.newID = ids.UUID
	}
	return h
}

type requestIDKey struct{}

// RequestID returns the request ID the handler gave the request whose
// operation runs with ctx ("" outside one).
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// codec is one wire protocol's encoding.
type codec interface {
	name() string
	acceptsContentType(mediaType string) bool
	decode(body []byte, v any) error
	encode(buf *bytes.Buffer, out any) error
	encodeError(buf *bytes.Buffer, code, msg string) error
	// setHeaders sets the Content-Type and protocol headers of a response;
	// errorCode is "" on success.
	setHeaders(h http.Header, hasBody bool, errorCode string)
}

// exchange is one request being served.
type exchange struct {
	h     *handler
	w     http.ResponseWriter
	r     *http.Request
	codec codec
	id    string
	op    string
	wrote bool
	code  string // the error code sent ("" for success)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := exchange{h: h, w: w, r: r, codec: codecFor(r), id: h.newID()}
	hdr := w.Header()
	hdr["X-Amzn-Requestid"] = []string{x.id} // x-amzn-RequestId, canonical form
	if _, ok := x.codec.(cborCodec); ok {
		hdr["Smithy-Protocol"] = smithyProtocolValue
	}
	if h.observe != nil {
		start := time.Now()
		defer func() { h.observe(x.op, x.code, time.Since(start)) }()
	}
	defer x.recoverPanic()
	out, err := x.serve()
	if err != nil {
		x.writeError(err)
		return
	}
	x.writeOutput(out)
}

// codecFor picks the protocol of a request, whose form its response takes:
// JSON at /, CBOR under /service/; elsewhere CBOR if the request has a
// smithy-protocol header, else JSON.
func codecFor(r *http.Request) codec {
	switch p := r.URL.Path; {
	case p == "/":
		return jsonCodec{}
	case strings.HasPrefix(p, cborPathPrefix), r.Header.Get(smithyProtocolKey) != "":
		return cborCodec{}
	}
	return jsonCodec{}
}

// serve runs the steps of a request and returns the operation's output.
func (x *exchange) serve() (any, error) {
	opName, err := x.route()
	if err != nil {
		return nil, err
	}
	if pc, ok := x.h.auth.(Prechecker); ok {
		if err := pc.Precheck(x.r); err != nil {
			return nil, err
		}
	}
	buf := getBuffer()
	defer putBuffer(buf)
	if err := x.readBody(buf, x.h.bodyLimit(opName)); err != nil {
		return nil, err
	}
	body := buf.Bytes()
	if err := x.checkContentType(len(body)); err != nil {
		return nil, err
	}
	ctx := x.r.Context()
	if x.h.auth != nil {
		if ctx, err = x.h.auth.Authenticate(x.r, body); err != nil {
			return nil, err
		}
		if ctx == nil {
			ctx = x.r.Context()
		}
	}
	op, ok := api.LookupOperation(opName)
	if !ok {
		return nil, newError(CodeUnknownOperation, http.StatusBadRequest, "%q is not a GameLift operation", clip(opName))
	}
	x.op = op.Name
	in := op.NewInput()
	if err := x.codec.decode(body, in); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return op.Invoke(context.WithValue(ctx, requestIDKey{}, x.id), x.h.svc, in)
}

// route checks path, method and protocol headers and returns the operation
// name the request carries (in its path or its X-Amz-Target header).
func (x *exchange) route() (string, error) {
	path := x.r.URL.Path
	op, isCBOR := cborRoute(path)
	if path != "/" && !isCBOR {
		return "", errNoRoute(x.r)
	}
	if x.r.Method != http.MethodPost {
		x.w.Header()["Allow"] = []string{http.MethodPost}
		return "", newError(CodeMethodNotAllowed, http.StatusMethodNotAllowed, "the GameLift API accepts POST only, not %s", clip(x.r.Method))
	}
	if isCBOR {
		return op, checkCBORHeaders(x.r)
	}
	return jsonOperation(x.r)
}

func errNoRoute(r *http.Request) error {
	return newError(CodeUnknownOperation, http.StatusNotFound,
		"no GameLift API route at %s: AWS JSON 1.1 is served at POST /, RPC v2 CBOR at POST /service/GameLift/operation/<Operation>",
		strconv.Quote(clip(r.URL.Path)))
}

// bodyLimit is the most bytes a request body of the operation called name
// may have: what the model allows its input (api.Operation.MaxBodyBytes,
// at least minOperationBody), within the handler's MaxBodyBytes.
func (h *handler) bodyLimit(name string) bodyLimit {
	op, ok := api.LookupOperation(name)
	if !ok || op.MaxBodyBytes == 0 {
		return bodyLimit{bytes: h.maxBody}
	}
	if n := max(op.MaxBodyBytes, minOperationBody); n < h.maxBody {
		return bodyLimit{bytes: n, op: op.Name}
	}
	return bodyLimit{bytes: h.maxBody}
}

// minOperationBody is the least an operation's body limit is: below it a
// value over its length constraint is answered as such, with the field
// named, rather than as a body too large.
const minOperationBody = 64 << 10

// bodyLimit is a bound on a request body: its bytes, and the operation
// whose model set it ("" for the handler's own).
type bodyLimit struct {
	bytes int64
	op    string
}

// tooLarge is the error of a body over the limit.
func (l bodyLimit) tooLarge() error {
	if l.op != "" {
		return newError(CodeRequestTooLarge, http.StatusRequestEntityTooLarge,
			"the request body is larger than %d bytes, the most a %s request can take within the model's limits", l.bytes, l.op)
	}
	return newError(CodeRequestTooLarge, http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", l.bytes)
}

// readBody reads the whole body into buf, at most lim bytes; a body
// announcing more is refused unread.
func (x *exchange) readBody(buf *bytes.Buffer, lim bodyLimit) error {
	max := lim.bytes
	if x.r.ContentLength > max {
		return lim.tooLarge()
	}
	// The buffer grows with what arrives, beyond what a pooled buffer
	// holds: a Content-Length alone (the body may never come) does not
	// make Hoist allocate it.
	if x.r.ContentLength > 0 {
		buf.Grow(int(min(x.r.ContentLength, maxPooledBuffer)) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(x.r.Body, max+1)); err != nil {
		if ae, ok := asAPIError(err); ok {
			return ae // e.g. the server's cap on bodies read at once
		}
		return errSerialization("could not read the request body: %s", err.Error())
	}
	if int64(buf.Len()) > max {
		return lim.tooLarge()
	}
	return nil
}

// checkContentType accepts the protocol's media types, and no Content-Type
// at all with an empty body.
func (x *exchange) checkContentType(bodyLen int) error {
	ct := x.r.Header.Get("Content-Type")
	if ct == "" && bodyLen == 0 {
		return nil
	}
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(mt)
	if x.codec.acceptsContentType(mt) {
		return nil
	}
	want := jsonContentType + " (or application/json)"
	if _, ok := x.codec.(cborCodec); ok {
		want = cborContentType
	}
	return newError(CodeUnsupportedMediaType, http.StatusUnsupportedMediaType,
		"Content-Type %q is not accepted here: send %s", clip(ct), want)
}

// writeOutput encodes and sends a successful output. A nil output (an
// operation without output shape) is {} in JSON and no body in CBOR.
func (x *exchange) writeOutput(out any) {
	buf := getBuffer()
	defer putBuffer(buf)
	_, isCBOR := x.codec.(cborCodec)
	switch {
	case out != nil:
		if err := x.codec.encode(buf, out); err != nil {
			x.writeError(&encodeError{op: x.op, err: err})
			return
		}
	case !isCBOR:
		buf.WriteString("{}")
	}
	x.send(http.StatusOK, buf.Bytes(), "")
}

// encodeError is an output that could not be encoded: a bug in Hoist.
type encodeError struct {
	op  string
	err error
}

func (e *encodeError) Error() string { return "encode " + e.op + " output: " + e.err.Error() }
func (e *encodeError) Unwrap() error { return e.err }

// writeError sends err in the protocol's error form. It is the only function
// that writes error responses.
func (x *exchange) writeError(err error) {
	ae, ok := asAPIError(err)
	if !ok {
		x.h.log.Error("internal error", "request_id", x.id, "operation", x.op, "protocol", x.codec.name(), "error", err)
		ae = internalError(x.id)
	} else if x.h.log.Enabled(x.r.Context(), slog.LevelDebug) {
		x.h.log.Debug("error response", "request_id", x.id, "operation", x.op, "protocol", x.codec.name(),
			"code", ae.ErrorCode(), "status", ae.HTTPStatus(), "message", ae.ErrorMessage())
	}
	code, msg, status := ae.ErrorCode(), ae.ErrorMessage(), ae.HTTPStatus()
	buf := getBuffer()
	defer putBuffer(buf)
	if err := x.codec.encodeError(buf, code, msg); err != nil {
		// Only a string that cannot be encoded gets here; send the code.
		buf.Reset()
		_ = x.codec.encodeError(buf, code, "")
	}
	x.send(status, buf.Bytes(), code)
}

// send writes the response.
func (x *exchange) send(status int, body []byte, errorCode string) {
	h := x.w.Header()
	x.codec.setHeaders(h, len(body) > 0, errorCode)
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	x.wrote, x.code = true, errorCode
	x.w.WriteHeader(status)
	_, _ = x.w.Write(body)
}

// recoverPanic answers a panic as an internal error, once it is logged with
// its stack. http.ErrAbortHandler keeps its meaning.
func (x *exchange) recoverPanic() {
	p := recover()
	if p == nil {
		return
	}
	if p == http.ErrAbortHandler {
		panic(p)
	}
	x.h.log.Error("panic serving request", "request_id", x.id, "operation", x.op, "protocol", x.codec.name(),
		"panic", p, "stack", string(debug.Stack()))
	if !x.wrote {
		x.writeError(internalError(x.id))
	}
}

// Buffers for bodies, reused across requests; large ones are left to the
// garbage collector so one big upload does not pin memory.
var bufferPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 256 << 10

func getBuffer() *bytes.Buffer { return bufferPool.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuffer {
		return
	}
	b.Reset()
	bufferPool.Put(b)
}
