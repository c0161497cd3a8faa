package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// Sessions of the console.
const (
	// cookieName is the console's cookie: a session token (with
	// credentials), or an anonymous token the CSRF tokens are bound to
	// (without).
	cookieName = "hoist_console"
	// DefaultSessionTTL is how long a sign-in lasts by default.
	DefaultSessionTTL = 12 * time.Hour
	// KindSession holds the console's sign-ins: ID = the SHA-256 (hex) of
	// the cookie's token, so that the store holds no usable token; Rank =
	// the expiry (Unix ms).
	KindSession store.Kind = "ConsoleSession"
	// maxForm bounds the body of a console form.
	maxForm = 4 << 10
)

// sessionRecord is a sign-in as stored.
type sessionRecord struct {
	AccessKeyID string    `json:"accessKeyId"`
	Created     time.Time `json:"created"`
	Expires     time.Time `json:"expires"`
}

// operator is who makes a request: the access key signed in with ("" in
// loopback mode) and the cookie's token.
type operator struct {
	AccessKey string
	token     string
	// expires is when the session ends (zero in loopback mode).
	expires time.Time
}

type operatorKey struct{}

// operatorOf returns the operator operator() found for r.
func operatorOf(r *http.Request) operator {
	op, _ := r.Context().Value(operatorKey{}).(operator)
	return op
}

// signedIn reports whether the console asks operators to sign in.
func (c *Console) signedIn() bool { return len(c.cfg.Credentials) > 0 }

// operator runs next for a request of a known operator: in loopback mode
// anyone (a new anonymous cookie is set when there is none), else the
// holder of an unexpired session; others are sent to sign in.
func (c *Console) operator(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok := cookieToken(r)
		if !c.signedIn() {
			if tok == "" {
				tok = newToken()
				c.setCookie(w, r, tok, 0)
			}
			next(w, r.WithContext(context.WithValue(r.Context(), operatorKey{}, operator{token: tok})))
			return
		}
		rec, err := c.session(r.Context(), tok)
		if err != nil {
			c.cfg.Logger.Error("console: reading a session", "err", err)
			c.fail(w, r, nil, http.StatusInternalServerError, "internal error")
			return
		}
		if rec == nil {
			if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, "/stream") {
				http.Redirect(w, r, Prefix+"/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "sign in to the console first", http.StatusUnauthorized)
			return
		}
		op := operator{AccessKey: rec.AccessKeyID, token: tok, expires: rec.Expires}
		next(w, r.WithContext(context.WithValue(r.Context(), operatorKey{}, op)))
	}
}

// cookieToken returns the well-formed token of the console's cookie ("":
// none).
func cookieToken(r *http.Request) string {
	ck, err := r.Cookie(cookieName)
	if err != nil || len(ck.Value) != 43 {
		return ""
	}
	if _, err := base64.RawURLEncoding.DecodeString(ck.Value); err != nil {
		return ""
	}
	return ck.Value
}

// newToken returns 32 random bytes, base64url.
func newToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// setCookie sets the console's cookie to tok: HttpOnly, SameSite=Strict,
// Secure over TLS, for the console's paths only; maxAge 0: a browser
// session cookie, < 0: deleted.
func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, tok string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: tok, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// sessionID is the store ID of a session token.
func sessionID(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

// session returns the unexpired session of tok (nil: none).
func (c *Console) session(ctx context.Context, tok string) (*sessionRecord, error) {
	if tok == "" {
		return nil, nil
	}
	var rec sessionRecord
	err := c.cfg.Store.View(ctx, func(tx store.Tx) error {
		_, err := store.GetJSON(ctx, tx, KindSession, sessionID(tok), &rec)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !c.cfg.Now().Before(rec.Expires) {
		return nil, nil
	}
	return &rec, nil
}

// checkKeyPair reports whether secret is the secret of access key id,
// comparing in constant time (an unknown key takes as long).
func (c *Console) checkKeyPair(id, secret string) bool {
	want, known := c.cfg.Credentials[id]
	if !known {
		want = "\x00 unknown access key"
	}
	a, b := sha256.Sum256([]byte(want)), sha256.Sum256([]byte(secret))
	return hmac.Equal(a[:], b[:]) && known && id != ""
}

// signInPage shows the sign-in form (in loopback mode, the overview).
func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if !c.signedIn() {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
		return
	}
	c.render(w, r, http.StatusOK, "signin", &view{Title: "Sign in", Data: signInData{Next: localPath(r.URL.Query().Get("next"))}})
}

// signInData fills the sign-in form.
type signInData struct {
	Next, AccessKey, Error string
}

// signIn checks an access key pair and starts a session.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	if !c.signedIn() {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form could not be read", http.StatusBadRequest)
		return
	}
	id, next := strings.TrimSpace(r.PostForm.Get("AccessKeyId")), localPath(r.PostForm.Get("next"))
	if !c.checkKeyPair(id, r.PostForm.Get("SecretAccessKey")) {
		c.cfg.Logger.Warn("console: sign-in refused", "accessKey", clip(id), "remote", r.RemoteAddr)
		c.render(w, r, http.StatusUnauthorized, "signin", &view{Title: "Sign in", Data: signInData{Next: next, AccessKey: id,
			Error: "This access key pair is not one Hoist accepts."}})
		return
	}
	tok, now := newToken(), c.cfg.Now()
	rec := sessionRecord{AccessKeyID: id, Created: now.UTC(), Expires: now.Add(c.cfg.SessionTTL).UTC()}
	err := c.cfg.Store.Update(r.Context(), func(tx store.Tx) error {
		if err := purgeSessions(r.Context(), tx, now); err != nil {
			return err
		}
		data, _ := json.Marshal(rec)
		return tx.Insert(r.Context(), store.Record{Kind: KindSession, ID: sessionID(tok), Rank: rec.Expires.UnixMilli(), Data: data})
	})
	if err != nil {
		c.cfg.Logger.Error("console: storing a session", "err", err)
		c.fail(w, r, nil, http.StatusInternalServerError, "internal error")
		return
	}
	c.cfg.Logger.Info("console: signed in", "accessKey", id)
	c.setCookie(w, r, tok, int(c.cfg.SessionTTL/time.Second))
	if next == "" {
		next = Prefix + "/"
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// purgeSessions deletes up to 64 expired sessions, in tx.
func purgeSessions(ctx context.Context, tx store.Tx, now time.Time) error {
	recs, _, err := tx.List(ctx, store.Query{Kind: KindSession, Order: store.OrderRankAsc,
		RankMax: now.UnixMilli(), HasRankMax: true, Limit: 64, NoData: true})
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if err := tx.Delete(ctx, KindSession, rec.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return nil
}

// signOut ends the operator's session (a CSRF-checked POST).
func (c *Console) signOut(w http.ResponseWriter, r *http.Request) {
	op := operatorOf(r)
	if !c.checkCSRF(w, r, op) {
		return
	}
	if c.signedIn() {
		err := c.cfg.Store.Update(r.Context(), func(tx store.Tx) error {
			err := tx.Delete(r.Context(), KindSession, sessionID(op.token))
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		})
		if err != nil {
			c.cfg.Logger.Error("console: ending a session", "err", err)
			c.fail(w, r, nil, http.StatusInternalServerError, "internal error")
			return
		}
	}
	c.setCookie(w, r, "", -1)
	http.Redirect(w, r, Prefix+"/signin", http.StatusSeeOther)
}

// csrfToken is the CSRF token of an operator's forms: an HMAC of the
// cookie's token under Config.Key, so a page of another site, which can
// neither read the cookie nor the console's pages, cannot make one.
func (c *Console) csrfToken(op operator) string {
	m := hmac.New(sha256.New, c.cfg.Key)
	m.Write([]byte("console-csrf\x00"))
	m.Write([]byte(op.token))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF reads the form of a write (bounded) and checks its csrf
// field against the operator's token; false: answered already (403).
func (c *Console) checkCSRF(w http.ResponseWriter, r *http.Request, op operator) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form could not be read", http.StatusBadRequest)
		return false
	}
	got := r.PostForm.Get("csrf")
	if op.token == "" || !hmac.Equal([]byte(got), []byte(c.csrfToken(op))) {
		c.cfg.Logger.Warn("console: a write without a valid CSRF token refused", "path", r.URL.Path, "remote", r.RemoteAddr)
		http.Error(w, "this form's CSRF token is missing or not this session's: reload the page and try again", http.StatusForbidden)
		return false
	}
	return true
}

// localPath returns p when it is a path of the console (to go back to
// after an action or a sign-in), else "".
func localPath(p string) string {
	if p == Prefix || strings.HasPrefix(p, Prefix+"/") && !strings.ContainsAny(p, "\\\r\n") && !strings.Contains(p, "//") {
		return p
	}
	return ""
}

// loopbackPeer reports whether a RemoteAddr is a loopback address.
func loopbackPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// clip shortens s for a log line.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
