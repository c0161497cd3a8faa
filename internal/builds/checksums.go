package builds

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"net/http"
	"strings"
)

// crc64NVME is the CRC-64/NVME table (reflected polynomial), the one S3's
// CRC64NVME checksum uses.
var crc64NVME = crc64.MakeTable(0x9a6c9329ac4bc9b5)

// checksumAlgorithms are S3's flexible checksums by lower-case name, as in
// the x-amz-checksum-<name> headers.
var checksumAlgorithms = map[string]func() hash.Hash{
	"crc32":     func() hash.Hash { return crc32.NewIEEE() },
	"crc32c":    func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) },
	"crc64nvme": func() hash.Hash { return crc64.New(crc64NVME) },
	"sha1":      sha1.New,
	"sha256":    sha256.New,
}

const checksumHeaderPrefix = "x-amz-checksum-"

// digester hashes an upload as it streams: MD5 (the ETag; nil when not
// needed), SHA-256
// when the signature covers the payload's hash, and every flexible
// checksum the request names.
type digester struct {
	md5      hash.Hash
	sha256   hash.Hash // nil unless wanted
	checks   map[string]hash.Hash
	expected map[string]string // algorithm -> base64 value from headers
	n        int64
}

// newDigester prepares hashes for a request. trailer names the checksum
// an aws-chunked body carries in its trailer ("" for none).
func newDigester(h http.Header, wantSHA256 bool, trailer string) (*digester, error) {
	d := &digester{md5: md5.New(), checks: map[string]hash.Hash{}, expected: map[string]string{}}
	if wantSHA256 {
		d.sha256 = sha256.New()
	}
	for name, vals := range h {
		lname := strings.ToLower(name)
		algo, ok := strings.CutPrefix(lname, checksumHeaderPrefix)
		if !ok || algo == "algorithm" || algo == "type" {
			continue
		}
		newHash, known := checksumAlgorithms[algo]
		if !known {
			return nil, errInvalidArgument("Hoist does not know the checksum %s", name)
		}
		d.checks[algo] = newHash()
		d.expected[algo] = vals[0]
	}
	for _, algo := range []string{strings.ToLower(h.Get("x-amz-sdk-checksum-algorithm")), trailerAlgorithm(trailer)} {
		if algo == "" || d.checks[algo] != nil {
			continue
		}
		newHash, known := checksumAlgorithms[algo]
		if !known {
			return nil, errInvalidArgument("Hoist does not know the checksum algorithm %q", algo)
		}
		d.checks[algo] = newHash()
	}
	return d, nil
}

// trailerAlgorithm returns the algorithm of an x-amz-trailer value such as
// "x-amz-checksum-crc32".
func trailerAlgorithm(trailer string) string {
	algo, _ := strings.CutPrefix(strings.ToLower(strings.TrimSpace(trailer)), checksumHeaderPrefix)
	return algo
}

func (d *digester) Write(p []byte) (int, error) {
	if d.md5 != nil {
		d.md5.Write(p)
	}
	if d.sha256 != nil {
		d.sha256.Write(p)
	}
	for _, h := range d.checks {
		h.Write(p)
	}
	d.n += int64(len(p))
	return len(p), nil
}

// verify compares the computed digests with what the request declared:
// the payload hash the signature covers, Content-MD5, the checksum
// headers and the trailer checksums.
func (d *digester) verify(payloadSHA256 string, h http.Header, trailers map[string]string) error {
	if d.sha256 != nil {
		got := hex.EncodeToString(d.sha256.Sum(nil))
		if subtle.ConstantTimeCompare([]byte(got), []byte(strings.ToLower(payloadSHA256))) != 1 {
			return s3Errorf(http.StatusBadRequest, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.")
		}
	}
	if want := h.Get("Content-MD5"); want != "" && d.md5 != nil && want != base64.StdEncoding.EncodeToString(d.md5.Sum(nil)) {
		return s3Errorf(http.StatusBadRequest, "BadDigest", "The Content-MD5 you specified did not match what we received.")
	}
	for algo, v := range trailers {
		d.expected[algo] = v
	}
	for algo, want := range d.expected {
		if d.checks[algo] == nil {
			return errInvalidArgument("the trailer carries the checksum %s, which the request did not announce", algo)
		}
		if d.sum(algo) != want {
			return s3Errorf(http.StatusBadRequest, "BadDigest", "The %s you specified did not match the calculated checksum.", strings.ToUpper(algo))
		}
	}
	return nil
}

// sum returns a checksum as S3 writes it (base64 of the big-endian bytes).
func (d *digester) sum(algo string) string {
	return base64.StdEncoding.EncodeToString(d.checks[algo].Sum(nil))
}

// sums returns every flexible checksum computed.
func (d *digester) sums() map[string]string {
	if len(d.checks) == 0 {
		return nil
	}
	out := make(map[string]string, len(d.checks))
	for algo := range d.checks {
		out[algo] = d.sum(algo)
	}
	return out
}

// etag returns the quoted hex MD5, S3's ETag of a single-part object.
func (d *digester) etag() string { return `"` + hex.EncodeToString(d.md5.Sum(nil)) + `"` }

// setChecksumHeaders writes checksums back as response headers.
func setChecksumHeaders(w http.ResponseWriter, sums map[string]string) {
	for algo, v := range sums {
		w.Header().Set(checksumHeaderPrefix+algo, v)
	}
}
