package hostproto

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
)

// EnrolmentToken is an enrolment token: ID finds it in Hoist's store,
// Secret proves it (Hoist keeps only its SHA-256), and CAPin is the
// SHA-256 of Hoist's CA certificate (DER), so an agent given the token
// alone can check it talks to the right Hoist before it sends the token,
// as kubeadm's join tokens carry the CA's hash. Written as
// <ID>.<Secret>.<CAPin>, all lowercase hex.
type EnrolmentToken struct {
	ID, Secret, CAPin string
}

// Lengths of a token's parts in hex digits.
const (
	tokenIDLen     = 16
	tokenSecretLen = 64
	tokenPinLen    = 64
)

// NewEnrolmentToken returns a fresh token for the CA certificate caDER.
func NewEnrolmentToken(caDER []byte) EnrolmentToken {
	return EnrolmentToken{ID: randomHex(tokenIDLen / 2), Secret: randomHex(tokenSecretLen / 2), CAPin: CAPin(caDER)}
}

// CAPin is the pin of a CA certificate: the SHA-256 of its DER, hex.
func CAPin(caDER []byte) string {
	sum := sha256.Sum256(caDER)
	return hex.EncodeToString(sum[:])
}

// String writes the token.
func (t EnrolmentToken) String() string { return t.ID + "." + t.Secret + "." + t.CAPin }

// ErrBadToken: the text is not an enrolment token.
var ErrBadToken = errors.New("not a Hoist enrolment token: want <16 hex digits>.<64 hex digits>.<64 hex digits>, as hoist admin create-enrolment-token prints it")

// ParseEnrolmentToken reads a token (surrounding space is ignored).
func ParseEnrolmentToken(s string) (EnrolmentToken, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) != 3 || !isHex(parts[0], tokenIDLen) || !isHex(parts[1], tokenSecretLen) || !isHex(parts[2], tokenPinLen) {
		return EnrolmentToken{}, ErrBadToken
	}
	return EnrolmentToken{ID: parts[0], Secret: parts[1], CAPin: parts[2]}, nil
}

// SecretHash is what Hoist keeps of a secret (a token's or a host's): its
// SHA-256, hex. Secrets are 32 random bytes, so a fast hash is enough.
func SecretHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewHostSecret returns a fresh host secret (64 hex digits).
func NewHostSecret() string { return randomHex(32) }

// authScheme is the Authorization scheme of a host's requests.
const authScheme = "HoistHost"

// SetCredential puts a host's credential on a request:
// Authorization: HoistHost <host ID> <secret>.
func SetCredential(h http.Header, hostID, secret string) {
	h.Set("Authorization", authScheme+" "+hostID+" "+secret)
}

// ErrNoCredential: the request carries no well-formed host credential.
var ErrNoCredential = errors.New("the request carries no host credential (Authorization: HoistHost <host ID> <secret>)")

// maxHostIDLen bounds a host ID read from a request.
const maxHostIDLen = 64

// Credential reads a host's credential from a request's headers.
func Credential(h http.Header) (hostID, secret string, err error) {
	v := h.Get("Authorization")
	scheme, rest, ok := strings.Cut(v, " ")
	if !ok || scheme != authScheme {
		return "", "", ErrNoCredential
	}
	hostID, secret, ok = strings.Cut(rest, " ")
	if !ok || hostID == "" || len(hostID) > maxHostIDLen || strings.ContainsAny(hostID, " /") || !isHex(secret, 64) {
		return "", "", ErrNoCredential
	}
	return hostID, secret, nil
}

// isHex reports whether s is n lowercase hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("hostproto: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)
}
