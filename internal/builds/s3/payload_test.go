package s3

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestChecksumVectors(t *testing.T) {
	// Check values of "123456789" for each algorithm's CRC definition.
	tests := map[string]uint64{
		"crc32":     0xcbf43926,
		"crc32c":    0xe3069283,
		"crc64nvme": 0xae8b14860a799888,
	}
	for algo, want := range tests {
		h := checksumAlgorithms[algo]()
		h.Write([]byte("123456789"))
		sum := h.Sum(nil)
		var got uint64
		if len(sum) == 4 {
			got = uint64(binary.BigEndian.Uint32(sum))
		} else {
			got = binary.BigEndian.Uint64(sum)
		}
		if got != want {
			t.Errorf("%s = %#x, want %#x", algo, got, want)
		}
	}
}

func crc32Of(s string) string {
	h := checksumAlgorithms["crc32"]()
	h.Write([]byte(s))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

func TestChunkedPayload(t *testing.T) {
	data := "hello, chunked world"
	good := "5\r\nhello\r\n" + "f\r\n, chunked world\r\n" + "0\r\n" + "x-amz-checksum-crc32:" + crc32Of(data) + "\r\n\r\n"
	tests := map[string]struct {
		body    string
		length  string
		trailer string
		want    string // payload read, when no error
		code    string // Error code expected
	}{
		"good":               {body: good, want: data},
		"no final blank":     {body: strings.TrimSuffix(good, "\r\n"), want: data},
		"chunk extension":    {body: "5;chunk-signature=abc\r\nhello\r\n0\r\nx-amz-checksum-crc32:" + crc32Of("hello") + "\r\n\r\n", length: "5", want: "hello"},
		"wrong checksum":     {body: strings.Replace(good, crc32Of(data), crc32Of("other"), 1), code: "BadDigest"},
		"missing trailer":    {body: "5\r\nhello\r\n0\r\n\r\n", length: "5", code: "InvalidRequest"},
		"no trailer needed":  {body: "5\r\nhello\r\n0\r\n\r\n", length: "5", trailer: "-", want: "hello"},
		"bad size":           {body: "zz\r\nhello\r\n0\r\n\r\n", code: "IncompleteBody"},
		"missing CRLF":       {body: "5\r\nhelloX\r\n0\r\n\r\n", code: "IncompleteBody"},
		"truncated":          {body: "15\r\nhello", code: "IncompleteBody"},
		"length mismatch":    {body: good, length: "99", code: "IncompleteBody"},
		"no decoded length":  {body: good, length: "-", code: "MissingContentLength"},
		"undeclared trailer": {body: "5\r\nhello\r\n0\r\nx-amz-checksum-sha1:abc=\r\n\r\n", length: "5", trailer: "-", code: "InvalidArgument"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPut, "/b/k", strings.NewReader(tc.body))
			switch tc.length {
			case "":
				r.Header.Set("x-amz-decoded-content-length", "20")
			case "-":
			default:
				r.Header.Set("x-amz-decoded-content-length", tc.length)
			}
			if tc.trailer == "" {
				r.Header.Set("x-amz-trailer", "x-amz-checksum-crc32")
			}
			got, err := readPayload(r, streamingUnsignedTrailer)
			var se *Error
			switch {
			case tc.code != "":
				if !errors.As(err, &se) || se.Code != tc.code {
					t.Fatalf("err = %v, want %s", err, tc.code)
				}
			case err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Fatalf("payload %q, want %q", got, tc.want)
			}
		})
	}
}

// readPayload reads a request payload as builds' receiveBody does, without a
// blob.
func readPayload(r *http.Request, payloadHash string) (string, error) {
	body, err := NewPayloadReader(r, payloadHash)
	if err != nil {
		return "", err
	}
	d, err := NewDigester(r.Header, IsSHA256Hex(payloadHash), r.Header.Get("x-amz-trailer"))
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.TeeReader(body, d))
	if err == nil {
		err = CheckLength(int64(len(b)), 1<<20, body.Length)
	}
	if err == nil {
		err = d.Verify(payloadHash, r.Header, body.Trailers())
	}
	return string(b), err
}

func TestPlainPayloadDigests(t *testing.T) {
	const body = "archive bytes"
	sha := "6c6bd5e6e9c0a9c2f3d1ddf2dfc7d4c4aef2b57e6b1a5c52d1e0e3e2f0c1a2b3" // not the hash of body
	tests := map[string]struct {
		hash   string
		header map[string]string
		code   string
	}{
		"unsigned":          {hash: unsignedPayload},
		"signed hash wrong": {hash: sha, code: "XAmzContentSHA256Mismatch"},
		"bad md5":           {hash: unsignedPayload, header: map[string]string{"Content-MD5": "AAAAAAAAAAAAAAAAAAAAAA=="}, code: "BadDigest"},
		"good crc32":        {hash: unsignedPayload, header: map[string]string{"x-amz-checksum-crc32": crc32Of(body)}},
		"bad crc32":         {hash: unsignedPayload, header: map[string]string{"x-amz-checksum-crc32": crc32Of("x")}, code: "BadDigest"},
		"unknown checksum":  {hash: unsignedPayload, header: map[string]string{"x-amz-checksum-md4": "x"}, code: "InvalidArgument"},
		"signed chunks":     {hash: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", code: "NotImplemented"},
		"missing hash":      {hash: "", code: "InvalidRequest"},
		"garbage hash":      {hash: "nonsense", code: "InvalidArgument"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPut, "/b/k", strings.NewReader(body))
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			_, err := readPayload(r, tc.hash)
			var se *Error
			if tc.code == "" && err != nil || tc.code != "" && (!errors.As(err, &se) || se.Code != tc.code) {
				t.Fatalf("err = %v, want %q", err, tc.code)
			}
		})
	}
}

// FuzzChunkedReader feeds arbitrary bodies to the aws-chunked decoder: it
// must end with data or an error, never panic or read past the body.
func FuzzChunkedReader(f *testing.F) {
	f.Add([]byte("5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n"))
	f.Add([]byte("5;chunk-signature=00\r\nhello\r\n0\r\n\r\n"))
	f.Add([]byte("ffffffffffffffff\r\nx"))
	f.Add([]byte("0\r\n" + strings.Repeat("a:b\r\n", 20)))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := &chunkedReader{br: bufio.NewReaderSize(bytes.NewReader(body), 16), trailer: "x-amz-checksum-crc32"}
		n, err := io.Copy(io.Discard, c)
		if err == nil && n > int64(len(body)) {
			t.Fatalf("decoded %d bytes from a %d-byte body", n, len(body))
		}
	})
}
