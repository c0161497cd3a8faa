package builds

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/hoistgg/hoist/internal/api"
	"github.com/hoistgg/hoist/internal/store"
)

// issuedCredentials are upload credentials as handed to the client.
type issuedCredentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	Expires                                    time.Time
}

func (c issuedCredentials) api() *api.AwsCredentials {
	return &api.AwsCredentials{
		AccessKeyId:     api.String(c.AccessKeyID),
		SecretAccessKey: api.String(c.SecretAccessKey),
		SessionToken:    api.String(c.SessionToken),
	}
}

// issueCredentials creates upload credentials for a build in tx, first
// deleting the build's expired ones.
func (s *Service) issueCredentials(ctx context.Context, tx store.Tx, r *Record) (issuedCredentials, error) {
	now := s.now()
	if err := s.deleteExpiredCredentials(ctx, tx, *r.BuildId, now); err != nil {
		return issuedCredentials{}, err
	}
	c := issuedCredentials{
		AccessKeyID:     "ASIA" + randomBase32(10),
		SecretAccessKey: randomBase64(30),
		SessionToken:    "HoistUpload" + randomBase64(96),
		Expires:         now.Add(s.cfg.CredentialsTTL),
	}
	sealed, err := sealSecret(c.AccessKeyID, c.SessionToken, c.SecretAccessKey)
	if err != nil {
		return issuedCredentials{}, err
	}
	rec := credRecord{
		BuildID:    *r.BuildId,
		TokenHash:  tokenHash(c.SessionToken),
		SealedKey:  sealed,
		Expires:    c.Expires,
		StorageKey: r.StorageKey,
	}
	err = store.PutJSON(ctx, tx, store.Record{Kind: KindUploadCredentials, ID: c.AccessKeyID, Parent: *r.BuildId}, rec)
	return c, err
}

func (s *Service) deleteExpiredCredentials(ctx context.Context, tx store.Tx, buildID string, now time.Time) error {
	recs, _, err := tx.List(ctx, store.Query{Kind: KindUploadCredentials, Parent: buildID, HasParent: true})
	if err != nil {
		return err
	}
	for _, rec := range recs {
		var c credRecord
		if err := store.Decode(rec, &c); err != nil || !now.Before(c.Expires) {
			if err := tx.Delete(ctx, KindUploadCredentials, rec.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// errUnknownKey: the access key ID is not an upload credential.
var errUnknownKey = errors.New("not an upload access key")

// credentialError is a reason to refuse upload credentials, answered to
// the client as S3 error Code.
type credentialError struct{ Code, Message string }

func (e *credentialError) Error() string { return e.Code + ": " + e.Message }

// lookupCredentials returns the build, storage key and secret access key
// of upload credentials, checking the session token (in constant time) and
// the expiry. errUnknownKey means the ID is not an upload credential.
func (s *Service) lookupCredentials(ctx context.Context, akid, token string) (credRecord, string, error) {
	var c credRecord
	err := s.cfg.Store.View(ctx, func(tx store.Tx) error {
		_, err := store.GetJSON(ctx, tx, KindUploadCredentials, akid, &c)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return c, "", errUnknownKey
	case err != nil:
		return c, "", err
	}
	if token == "" {
		return c, "", &credentialError{"InvalidToken", "upload credentials need their session token (X-Amz-Security-Token)"}
	}
	if subtle.ConstantTimeCompare([]byte(tokenHash(token)), []byte(c.TokenHash)) != 1 {
		return c, "", &credentialError{"InvalidToken", "the session token does not belong to this access key"}
	}
	if !s.cfg.Now().Before(c.Expires) {
		return c, "", &credentialError{"ExpiredToken", "the upload credentials have expired; call RequestUploadCredentials for new ones"}
	}
	secret, err := openSecret(akid, token, c.SealedKey)
	if err != nil {
		return c, "", &credentialError{"InvalidToken", "the session token does not belong to this access key"}
	}
	return c, secret, nil
}

func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// secretAEAD returns the cipher that seals a secret access key under its
// session token.
func secretAEAD(token string) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, []byte(token), nil, "hoist build upload secret", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealSecret encrypts secret under token, bound to the access key ID;
// the result is the nonce followed by the ciphertext.
func sealSecret(akid, token, secret string) ([]byte, error) {
	aead, err := secretAEAD(token)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, []byte(secret), []byte(akid)), nil
}

func openSecret(akid, token string, sealed []byte) (string, error) {
	aead, err := secretAEAD(token)
	if err != nil {
		return "", err
	}
	if len(sealed) < aead.NonceSize() {
		return "", fmt.Errorf("sealed secret too short")
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], []byte(akid))
	return string(plain), err
}

func randomBase32(nbytes int) string {
	b := make([]byte, nbytes)
	_, _ = rand.Read(b)
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)
}

func randomBase64(nbytes int) string {
	b := make([]byte, nbytes)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
