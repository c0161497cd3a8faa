package console

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"strings"
	"time"

	"github.com/hoistgg/hoist/internal/api"
)

// view is what every page's template gets.
type view struct {
	Title string
	// Nav names the section highlighted in the navigation.
	Nav string
	// Operator is the access key signed in with ("" in loopback mode);
	// SignedIn whether the console asks for sign-in at all.
	Operator string
	SignedIn bool
	CSRF     string
	// Here is the page's own path and query (forms go back to it).
	Here    string
	Replica string
	Now     time.Time
	// Done is the message of an action just done (?done=).
	Done string
	// Next is the link to the next page of the page's list ("": none).
	Next string
	Data any
}

// pageFunc fills a page: its template's name and view, or an error.
type pageFunc func(r *http.Request, v *view) (string, error)

// page serves a GET page: pageFunc's view in its template, or the error
// as a page of its own (an API error with its status).
func (c *Console) page(f pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := &view{}
		name, err := f(r, v)
		if err != nil {
			c.failErr(w, r, err)
			return
		}
		c.render(w, r, http.StatusOK, name, v)
	}
}

// failErr answers err as an error page: a modeled API error with its
// status and message, anything else as an internal error (logged).
func (c *Console) failErr(w http.ResponseWriter, r *http.Request, err error) {
	var ae api.Error
	if errors.As(err, &ae) {
		c.fail(w, r, nil, ae.HTTPStatus(), ae.ErrorCode()+": "+ae.ErrorMessage())
		return
	}
	c.cfg.Logger.Error("console", "path", r.URL.Path, "err", err)
	c.fail(w, r, nil, http.StatusInternalServerError, "internal error (logged)")
}

// fail answers an error page with status and msg.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, v *view, status int, msg string) {
	if v == nil {
		v = &view{}
	}
	v.Title, v.Data = http.StatusText(status), msg
	c.render(w, r, status, "error", v)
}

// render writes page name with v, filling the common fields; the page is
// rendered into memory first, so a template error is a clean 500.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, v *view) {
	op := operatorOf(r)
	v.Operator, v.SignedIn, v.Replica, v.Now = op.AccessKey, c.signedIn(), c.cfg.ReplicaID, c.cfg.Now().UTC()
	if op.token != "" {
		v.CSRF = c.csrfToken(op)
	}
	v.Here = r.URL.RequestURI()
	if v.Done == "" {
		v.Done = r.URL.Query().Get("done")
	}
	t := c.pages[name]
	var buf bytes.Buffer
	if t == nil {
		c.cfg.Logger.Error("console: no template", "name", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		c.cfg.Logger.Error("console: template", "name", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// parsePages parses each page template with the layout.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		return nil, err
	}
	base, err := template.New("").Funcs(funcs).ParseFS(assets, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(assets, n)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", n, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"show":  show,
	"q":     url.QueryEscape,
	"local": localURL,
	"join":  func(xs []string) string { return strings.Join(xs, ", ") },
	"add":   func(a, b int) int { return a + b },
	"gameSessionStatuses": func() []string {
		return []string{"ACTIVE", "ACTIVATING", "TERMINATING", "TERMINATED", "ERROR"}
	},
}

// show writes a value of an API shape as text: pointers followed, nil as
// an em dash, times in UTC to the second.
func show(x any) string {
	v := reflect.ValueOf(x)
	for v.IsValid() && v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "—"
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return "—"
	}
	switch t := v.Interface().(type) {
	case api.Timestamp:
		return t.UTC().Format("2006-01-02 15:04:05")
	case time.Time:
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	case string:
		if t == "" {
			return "—"
		}
		return t
	}
	return fmt.Sprint(v.Interface())
}

// localURL returns the path and query of an absolute URL Hoist made (a
// signed log URL), so the link follows the console's own origin.
func localURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Path == "" {
		return ""
	}
	return p.RequestURI()
}

// nextLink returns the page's own URL with its `next` parameter set to
// token ("" when there is no next page).
func nextLink(r *http.Request, token string) string {
	if token == "" {
		return ""
	}
	q := r.URL.Query()
	q.Set("next", token)
	q.Del("done")
	return r.URL.Path + "?" + q.Encode()
}

// limit is the Limit of an API list call of one page.
func limit() *int32 { n := int32(pageSize); return &n }

// token is the NextToken of a request's `next` parameter (nil: first
// page).
func token(r *http.Request) *string {
	if t := r.URL.Query().Get("next"); t != "" {
		return &t
	}
	return nil
}
