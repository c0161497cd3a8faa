package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"time"
)

// signer signs AWS JSON 1.1 requests with SigV4 (content-type, host,
// x-amz-date and x-amz-target signed, as the AWS SDKs do). It is cheap so
// that it does not distort the measurement: the signing key is derived once
// per day, the HMAC is reset rather than rebuilt, X-Amz-Date is formatted
// once per second and no buffer is allocated per request. One signer per
// worker: it is not safe for concurrent use.
type signer struct {
	akid, secret, region, service string
	host                          string

	day     string    // date of key
	mac     hash.Hash // HMAC-SHA256 keyed with the day's signing key
	sec     int64     // Unix second of amzDate
	amzDate string
	sha     hash.Hash
	buf     []byte
	sum     [sha256.Size]byte
}

func newSigner(akid, secret, region, service, host string) *signer {
	return &signer{akid: akid, secret: secret, region: region, service: service, host: host,
		sha: sha256.New(), buf: make([]byte, 0, 1024)}
}

// headers are the signed request's headers: X-Amz-Date and Authorization.
type headers struct {
	amzDate, authorization string
}

// sign returns the X-Amz-Date and Authorization headers of a POST / with
// the given X-Amz-Target and body at now.
func (s *signer) sign(target string, body []byte, now time.Time) headers {
	now = now.UTC()
	if sec := now.Unix(); sec != s.sec || s.amzDate == "" {
		s.sec, s.amzDate = sec, now.Format("20060102T150405Z")
	}
	date := s.amzDate[:8]
	if date != s.day {
		s.day = date
		k := hmacSum([]byte("AWS4"+s.secret), date)
		k = hmacSum(k, s.region)
		k = hmacSum(k, s.service)
		k = hmacSum(k, "aws4_request")
		s.mac = hmac.New(sha256.New, k)
	}
	scope := date + "/" + s.region + "/" + s.service + "/aws4_request"

	// Payload hash.
	s.sha.Reset()
	s.sha.Write(body)
	var payload [64]byte
	hex.Encode(payload[:], s.sha.Sum(s.sum[:0]))

	// Canonical request.
	b := s.buf[:0]
	b = append(b, "POST\n/\n\ncontent-type:"+jsonContentType+"\nhost:"...)
	b = append(b, s.host...)
	b = append(b, "\nx-amz-date:"...)
	b = append(b, s.amzDate...)
	b = append(b, "\nx-amz-target:"...)
	b = append(b, target...)
	b = append(b, "\n\n"+signedHeaders+"\n"...)
	b = append(b, payload[:]...)
	s.sha.Reset()
	s.sha.Write(b)
	var creqHash [64]byte
	hex.Encode(creqHash[:], s.sha.Sum(s.sum[:0]))

	// String to sign and signature.
	b = append(b[:0], "AWS4-HMAC-SHA256\n"...)
	b = append(b, s.amzDate...)
	b = append(b, '\n')
	b = append(b, scope...)
	b = append(b, '\n')
	b = append(b, creqHash[:]...)
	s.mac.Reset()
	s.mac.Write(b)
	var sig [64]byte
	hex.Encode(sig[:], s.mac.Sum(s.sum[:0]))
	s.buf = b

	auth := "AWS4-HMAC-SHA256 Credential=" + s.akid + "/" + scope +
		", SignedHeaders=" + signedHeaders + ", Signature=" + string(sig[:])
	return headers{amzDate: s.amzDate, authorization: auth}
}

const signedHeaders = "content-type;host;x-amz-date;x-amz-target"

func hmacSum(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}
