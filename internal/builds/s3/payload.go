package s3

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/hoistgg/hoist/internal/sigv4"
)

// Payload hash values of x-amz-content-sha256 other than a hex digest.
const (
	unsignedPayload          = sigv4.UnsignedPayload
	streamingUnsignedTrailer = sigv4.StreamingUnsignedPayloadTrailer
	streamingSignedPrefix    = sigv4.StreamingSignedPayloadPrefix
)

const (
	maxChunkLine     = 4096
	maxTrailerFields = 16
)

// PayloadReader reads an upload's payload: the body itself, or the data of
// an aws-chunked body.
type PayloadReader struct {
	io.Reader
	// Length is the payload's declared length, -1 when unknown.
	Length int64
	chunks *chunkedReader // nil for a plain body
}

// Trailers returns the flexible checksums an aws-chunked body's trailer
// carried (algorithm -> base64 value), once the payload is read.
func (p *PayloadReader) Trailers() map[string]string {
	if p.chunks == nil {
		return nil
	}
	return p.chunks.checksums
}

// NewPayloadReader picks how to read r's body from the payload hash the
// signature covers: a hex SHA-256 or UNSIGNED-PAYLOAD mean the body is the
// payload; STREAMING-UNSIGNED-PAYLOAD-TRAILER means an aws-chunked body
// with a checksum trailer. Signed chunks (STREAMING-AWS4-HMAC-SHA256-...)
// are not served: no SDK sends them unless told to.
func NewPayloadReader(r *http.Request, payloadHash string) (*PayloadReader, error) {
	switch h := payloadHash; {
	case IsSHA256Hex(h) || h == unsignedPayload:
		return &PayloadReader{Reader: r.Body, Length: r.ContentLength}, nil
	case h == streamingUnsignedTrailer:
		n, err := strconv.ParseInt(r.Header.Get("x-amz-decoded-content-length"), 10, 64)
		if err != nil || n < 0 {
			return nil, Errorf(http.StatusLengthRequired, "MissingContentLength", "An aws-chunked upload needs x-amz-decoded-content-length.")
		}
		c := &chunkedReader{br: bufio.NewReaderSize(r.Body, 64<<10), trailer: r.Header.Get("x-amz-trailer")}
		return &PayloadReader{Reader: c, Length: n, chunks: c}, nil
	case strings.HasPrefix(h, streamingSignedPrefix):
		return nil, ErrNotImplemented("a body with signed chunks (" + h + "); use UNSIGNED-PAYLOAD or a trailing checksum")
	case h == "":
		return nil, Errorf(http.StatusBadRequest, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
	default:
		return nil, Errorf(http.StatusBadRequest, "InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, or a valid sha256 value.")
	}
}

// chunkedReader decodes an unsigned aws-chunked body:
//
//	<hex size>[;ext]\r\n<data>\r\n ... 0\r\n<name>:<value>\r\n...\r\n
type chunkedReader struct {
	br        *bufio.Reader
	trailer   string // the x-amz-trailer header: the trailer field announced
	left      int64  // bytes left in the current chunk
	started   bool
	done      bool
	checksums map[string]string
}

var errBadChunk = Errorf(http.StatusBadRequest, "IncompleteBody", "The aws-chunked body is malformed or cut short.")

func (c *chunkedReader) Read(p []byte) (int, error) {
	for c.left == 0 {
		if c.done {
			return 0, io.EOF
		}
		if err := c.nextChunk(); err != nil {
			return 0, err
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if errors.Is(err, io.EOF) {
		err = errBadChunk
	}
	return n, err
}

// nextChunk reads the CRLF that ends the previous chunk's data and the next
// chunk's header; at the last chunk it reads the trailer.
func (c *chunkedReader) nextChunk() error {
	if c.started {
		if err := c.expectCRLF(); err != nil {
			return err
		}
	}
	c.started = true
	line, err := c.line()
	if err != nil {
		return err
	}
	sizeText, _, _ := strings.Cut(line, ";")
	size, err := strconv.ParseInt(strings.TrimSpace(sizeText), 16, 64)
	if err != nil || size < 0 {
		return errBadChunk
	}
	if size == 0 {
		c.done = true
		return c.readTrailer()
	}
	c.left = size
	return nil
}

func (c *chunkedReader) expectCRLF() error {
	var b [2]byte
	if _, err := io.ReadFull(c.br, b[:]); err != nil || b != [2]byte{'\r', '\n'} {
		return errBadChunk
	}
	return nil
}

// line reads one CRLF-terminated line (without the CRLF).
func (c *chunkedReader) line() (string, error) {
	b, err := c.br.ReadSlice('\n')
	if err != nil || len(b) > maxChunkLine || !bytes.HasSuffix(b, []byte("\r\n")) {
		return "", errBadChunk
	}
	return string(b[:len(b)-2]), nil
}

// readTrailer reads the trailer fields up to the empty line and keeps the
// flexible checksums; the announced trailer must be among them.
func (c *chunkedReader) readTrailer() error {
	c.checksums = map[string]string{}
	for i := 0; ; i++ {
		line, err := c.line()
		if err == errBadChunk && i > 0 {
			// Some clients end the body right after the last field.
			break
		}
		if err != nil {
			return err
		}
		if line == "" {
			break
		}
		if i >= maxTrailerFields {
			return errBadChunk
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return errBadChunk
		}
		if algo, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(name)), checksumHeaderPrefix); ok {
			c.checksums[algo] = strings.TrimSpace(value)
		}
	}
	if want := trailerAlgorithm(c.trailer); want != "" && c.checksums[want] == "" {
		return Errorf(http.StatusBadRequest, "InvalidRequest", "The trailer announced in x-amz-trailer (%s) is missing.", c.trailer)
	}
	return nil
}
