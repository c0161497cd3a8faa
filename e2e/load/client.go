package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const jsonContentType = "application/x-amz-json-1.1"

var (
	contentTypeValue = []string{jsonContentType}
	errNoID          = errors.New("the answer carries no GameServerId")
)

// client sends AWS JSON 1.1 requests, SigV4-signed, over at most conns
// keep-alive connections. The same client drives Hoist and the ceiling.
//
// Two transports: "net/http" (the default), Go's http.Client, which is how
// the ceiling in the spec was measured, and "raw", a minimal HTTP/1.1 client
// in which each worker owns one connection and writes a request and reads
// its answer in its own goroutine. The client shares the machine's cores
// with the server it measures; net/http spends two goroutine handoffs and
// several allocations per request, about twice the raw client's CPU.
type client struct {
	kind string
	hc   *http.Client // net/http
	url  *url.URL
	host string
	cred credentials
}

type credentials struct {
	AccessKeyID, Secret, Region string
}

// Transports.
const (
	transportRaw     = "raw"
	transportNetHTTP = "net/http"
)

func newClient(base string, conns int, cred credentials, transport string) (*client, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	u.Path = "/"
	c := &client{kind: transport, url: u, host: u.Host, cred: cred}
	switch transport {
	case transportRaw:
	case transportNetHTTP:
		tr := &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			MaxConnsPerHost:     conns,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}
		c.hc = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	default:
		return nil, fmt.Errorf("unknown transport %q (want %s or %s)", transport, transportRaw, transportNetHTTP)
	}
	return c, nil
}

func (c *client) close() {
	if c.hc != nil {
		c.hc.CloseIdleConnections()
	}
}

// conn is one worker's use of the client: its signer, buffers and, with
// the raw transport, its connection.
type conn struct {
	c    *client
	sign *signer
	resp bytes.Buffer
	body []byte
	raw  *rawConn
}

func (c *client) conn() *conn {
	k := &conn{c: c, sign: newSigner(c.cred.AccessKeyID, c.cred.Secret, c.cred.Region, "gamelift", c.host),
		body: make([]byte, 0, 256)}
	if c.kind == transportRaw {
		k.raw = &rawConn{addr: c.host, host: c.host}
	}
	return k
}

// close closes the worker's connection (raw transport).
func (k *conn) close() {
	if k.raw != nil {
		k.raw.close()
	}
}

// apiError is an error answer of the API.
type apiError struct {
	Status int
	Code   string
	Msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d %s: %s", e.Status, e.Code, e.Msg) }

// do sends one request for operation op with body and returns the answer's
// body (valid until the next call), or an *apiError, or a transport error.
func (k *conn) do(ctx context.Context, op string, body []byte) ([]byte, error) {
	target := "GameLift." + op
	h := k.sign.sign(target, body, time.Now())
	var status int
	var errType string
	var err error
	k.resp.Reset()
	if k.raw != nil {
		status, errType, err = k.raw.roundTrip(target, h, body, &k.resp)
	} else {
		status, errType, err = k.netHTTP(ctx, target, h, body)
	}
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, answerError(status, errType, k.resp.Bytes())
	}
	return k.resp.Bytes(), nil
}

func (k *conn) netHTTP(ctx context.Context, target string, h headers, body []byte) (int, string, error) {
	req := &http.Request{
		Method: http.MethodPost,
		URL:    k.c.url,
		Host:   k.c.host,
		Header: http.Header{
			"Content-Type":  contentTypeValue,
			"X-Amz-Target":  {target},
			"X-Amz-Date":    {h.amzDate},
			"Authorization": {h.authorization},
		},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Proto:         "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}
	resp, err := k.c.hc.Do(req.WithContext(ctx))
	if err != nil {
		return 0, "", err
	}
	_, err = k.resp.ReadFrom(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Amzn-Errortype"), err
}

// answerError reads an AWS JSON 1.1 error answer.
func answerError(status int, errType string, body []byte) error {
	e := &apiError{Status: status, Code: errType}
	var b struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &b) == nil {
		if e.Code == "" {
			e.Code = b.Type
		}
		e.Msg = b.Message
	}
	if i := strings.LastIndexByte(e.Code, '#'); i >= 0 {
		e.Code = e.Code[i+1:]
	}
	if i := strings.IndexByte(e.Code, ':'); i >= 0 {
		e.Code = e.Code[:i]
	}
	if e.Code == "" {
		e.Code = fmt.Sprintf("HTTP%d", status)
	}
	return e
}

// call marshals in, sends it and unmarshals the answer into out (nil: the
// answer is dropped). For setup, not for the measured loop.
func (k *conn) call(ctx context.Context, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	resp, err := k.do(ctx, op, body)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(resp, out)
}

// The measured loop builds its bodies by appending and reads the claimed
// game server's ID without a JSON decoder, so the client's cost per request
// stays small and the same for both servers.

func (k *conn) claimBody(group string) []byte {
	b := append(k.body[:0], `{"GameServerGroupName":"`...)
	b = append(b, group...)
	b = append(b, `"}`...)
	k.body = b
	return b
}

func (k *conn) updateBody(group, id, status string) []byte {
	b := append(k.body[:0], `{"GameServerGroupName":"`...)
	b = append(b, group...)
	b = append(b, `","GameServerId":"`...)
	b = append(b, id...)
	b = append(b, `","UtilizationStatus":"`...)
	b = append(b, status...)
	b = append(b, `"}`...)
	k.body = b
	return b
}

var idMember = []byte(`"GameServerId":"`)

// gameServerID returns the GameServerId member of an answer (IDs the load
// generator registers need no JSON escapes).
func gameServerID(resp []byte) (string, error) {
	i := bytes.Index(resp, idMember)
	if i < 0 {
		return "", errNoID
	}
	rest := resp[i+len(idMember):]
	j := bytes.IndexByte(rest, '"')
	if j <= 0 {
		return "", errNoID
	}
	return string(rest[:j]), nil
}
