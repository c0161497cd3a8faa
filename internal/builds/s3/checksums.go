package s3

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

// Digester hashes an upload as it streams: MD5 (the ETag; nil when not
// needed), SHA-256
// when the signature covers the payload's hash, and every flexible
// checksum the request names.
type Digester struct {
	md5      hash.Hash
	sha256   hash.Hash // nil unless wanted
	checks   map[string]hash.Hash
	expected map[string]string // algorithm -> base64 value from headers
	n        int64
}

// NewDigester prepares hashes for a request. trailer names the checksum
// an aws-chunked body carries in its trailer ("" for none).
func NewDigester(h http.Header, wantSHA256 bool, trailer string) (*Digester, error) {
	d := &Digester{md5: md5.New(), checks: map[string]hash.Hash{}, expected: map[string]string{}}
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
			return nil, ErrInvalidArgument("Hoist does not know the checksum %s", name)
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
			return nil, ErrInvalidArgument("Hoist does not know the checksum algorithm %q", algo)
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

// NewObjectDigester returns a Digester that checks one whole-object
// checksum of algo (a known algorithm, see ObjectChecksum) against want.
func NewObjectDigester(algo, want string) *Digester {
	return &Digester{checks: map[string]hash.Hash{algo: checksumAlgorithms[algo]()}, expected: map[string]string{algo: want}}
}

// Write hashes p.
func (d *Digester) Write(p []byte) (int, error) {
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

// Verify compares the computed digests with what the request declared:
// the payload hash the signature covers, Content-MD5, the checksum
// headers and the trailer checksums.
func (d *Digester) Verify(payloadSHA256 string, h http.Header, trailers map[string]string) error {
	if d.sha256 != nil {
		got := hex.EncodeToString(d.sha256.Sum(nil))
		if subtle.ConstantTimeCompare([]byte(got), []byte(strings.ToLower(payloadSHA256))) != 1 {
			return Errorf(http.StatusBadRequest, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.")
		}
	}
	if want := h.Get("Content-MD5"); want != "" && d.md5 != nil && want != base64.StdEncoding.EncodeToString(d.md5.Sum(nil)) {
		return Errorf(http.StatusBadRequest, "BadDigest", "The Content-MD5 you specified did not match what we received.")
	}
	for algo, v := range trailers {
		d.expected[algo] = v
	}
	for algo, want := range d.expected {
		if d.checks[algo] == nil {
			return ErrInvalidArgument("the trailer carries the checksum %s, which the request did not announce", algo)
		}
		if d.Sum(algo) != want {
			return Errorf(http.StatusBadRequest, "BadDigest", "The %s you specified did not match the calculated checksum.", strings.ToUpper(algo))
		}
	}
	return nil
}

// Sum returns a checksum as S3 writes it (base64 of the big-endian bytes).
func (d *Digester) Sum(algo string) string {
	return base64.StdEncoding.EncodeToString(d.checks[algo].Sum(nil))
}

// Sums returns every flexible checksum computed.
func (d *Digester) Sums() map[string]string {
	if len(d.checks) == 0 {
		return nil
	}
	out := make(map[string]string, len(d.checks))
	for algo := range d.checks {
		out[algo] = d.Sum(algo)
	}
	return out
}

// ETag returns the quoted hex MD5, S3's ETag of a single-part object.
func (d *Digester) ETag() string { return `"` + hex.EncodeToString(d.md5.Sum(nil)) + `"` }

// SetChecksumHeaders writes checksums back as response headers.
func SetChecksumHeaders(w http.ResponseWriter, sums map[string]string) {
	for algo, v := range sums {
		w.Header().Set(checksumHeaderPrefix+algo, v)
	}
}

// ObjectChecksum returns the whole-object checksum a
// CompleteMultipartUpload request declares in its headers, if any.
func ObjectChecksum(h http.Header) (algo, value string) {
	for name, vals := range h {
		a, ok := strings.CutPrefix(strings.ToLower(name), checksumHeaderPrefix)
		if !ok || a == "algorithm" || a == "type" || checksumAlgorithms[a] == nil {
			continue
		}
		return a, vals[0]
	}
	return "", ""
}

// IsComposite reports whether a whole-object checksum value is composite
// ("<b64>-<n>", the checksum of the parts' checksums).
func IsComposite(value string, h http.Header) bool {
	return strings.Contains(value, "-") || strings.EqualFold(h.Get("x-amz-checksum-type"), "COMPOSITE")
}

// CheckComposite verifies a composite checksum want of algo: the checksum
// of the parts' binary checksums, in order. sums[i] is the base64
// checksum of part numbers[i] ("" when it was uploaded without one).
func CheckComposite(algo, want string, numbers []int, sums []string) error {
	h := checksumAlgorithms[algo]()
	for i, v := range sums {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil || v == "" {
			return ErrInvalidArgument("part %d was uploaded without a %s checksum", numbers[i], strings.ToUpper(algo))
		}
		h.Write(b)
	}
	got := base64.StdEncoding.EncodeToString(h.Sum(nil))
	base, _, _ := strings.Cut(want, "-")
	if got != base {
		return Errorf(http.StatusBadRequest, "BadDigest", "The %s you specified did not match the calculated checksum.", strings.ToUpper(algo))
	}
	return nil
}
