//lint:file-ignore SA1019 aws-sdk-go v1 is one of the real clients Hoist is tested against

package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	glv2 "github.com/aws/aws-sdk-go-v2/service/gamelift"
	glv1 "github.com/aws/aws-sdk-go/service/gamelift"
	"github.com/fxamacker/cbor/v2"

	"github.com/hoistgg/hoist/e2e/hoisttest"
)

var requestIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// checkCommon checks what every response carries: a request ID (distinct
// from the ones seen before), smithy-protocol on CBOR responses, and never a
// 5xx.
func checkCommon(t testing.TB, proto string, r rawResponse, seen map[string]bool) {
	t.Helper()
	id := r.Header.Get("X-Amzn-Requestid")
	if !requestIDPattern.MatchString(id) {
		t.Errorf("x-amzn-RequestId %q is not a UUID", id)
	}
	if seen != nil {
		if seen[id] {
			t.Errorf("request ID %s repeated", id)
		}
		seen[id] = true
	}
	if proto == "cbor" {
		if sp := r.Header.Get("Smithy-Protocol"); sp != "rpc-v2-cbor" {
			t.Errorf("CBOR response without smithy-protocol: rpc-v2-cbor (got %q)", sp)
		}
		if r.Header.Get("X-Amzn-ErrorType") != "" {
			t.Errorf("CBOR response with x-amzn-ErrorType %q", r.Header.Get("X-Amzn-ErrorType"))
		}
	}
	if r.Status >= 500 {
		t.Errorf("HTTP %d: %s", r.Status, r.Body)
	}
	if cl := r.Header.Get("Content-Length"); cl != strconv.Itoa(len(r.Body)) {
		t.Errorf("Content-Length %q for a %d-byte body", cl, len(r.Body))
	}
}

// wantError checks an error response of proto: status, code, the error
// form, and returns the message.
func wantError(t testing.TB, proto string, r rawResponse, status int, code string, seen map[string]bool) string {
	t.Helper()
	checkCommon(t, proto, r, seen)
	got, msg := errorOf(t, proto, r)
	if r.Status != status || got != code {
		t.Errorf("HTTP %d %s %q, want %d %s", r.Status, got, msg, status, code)
	}
	if msg == "" {
		t.Errorf("%s error without a message", code)
	}
	return msg
}

// noNulls fails on any null (JSON) or null/undefined (CBOR, decoded as nil)
// value: absent members must be omitted.
func noNulls(t testing.TB, path string, v any) {
	t.Helper()
	switch x := v.(type) {
	case nil:
		t.Errorf("%s is null: absent members must be omitted", path)
	case map[string]any:
		for k, e := range x {
			noNulls(t, path+"."+k, e)
		}
	case map[any]any:
		for k, e := range x {
			noNulls(t, path+"."+toString(k), e)
		}
	case []any:
		for i, e := range x {
			noNulls(t, path+"["+strconv.Itoa(i)+"]", e)
		}
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// setupGroup creates the seed's game server group with a game server
// through raw JSON and returns nothing; it fails t on error.
func setupGroup(t *testing.T, h *hoisttest.Hoist) {
	t.Helper()
	r := jsonCall(t, h, "CreateGameServerGroup", []byte(`{"GameServerGroupName":"MegaFrogServers_NA",
		"RoleArn":"arn:aws:iam::123456789012:role/GameLiftGameServerGroupRole","MinSize":0,"MaxSize":2,
		"LaunchTemplate":{"LaunchTemplateName":"frog-template"},
		"InstanceDefinitions":[{"InstanceType":"c5.large"},{"InstanceType":"c5a.large"}]}`), rawOpts{})
	if r.Status != 200 {
		t.Fatalf("CreateGameServerGroup: %d %s", r.Status, r.Body)
	}
}

// TestWireSuccessJSON: a success through AWS JSON 1.1 has the JSON content
// type, timestamps as epoch seconds (a number, up to three decimals), no
// nulls, and optional members the resource lacks are absent.
func TestWireSuccessJSON(t *testing.T) {
	h := startHoist(t)
	seen := map[string]bool{}
	before := time.Now()
	setupGroup(t, h)
	r := jsonCall(t, h, "RegisterGameServer", []byte(`{"GameServerGroupName":"MegaFrogServers_NA",
		"GameServerId":"mega-frog-game-12345678","InstanceId":"i-1234567890abcdef0","ConnectionInfo":"192.0.2.0.80"}`), rawOpts{})
	checkCommon(t, "json", r, seen)
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/x-amz-json-1.1" {
		t.Fatalf("HTTP %d %q: %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	if bytes.Contains(r.Body, []byte("null")) {
		t.Errorf("body contains null: %s", r.Body)
	}
	var out map[string]any
	if err := jsonUnmarshal(r.Body, &out); err != nil {
		t.Fatal(err)
	}
	noNulls(t, "", out)
	gs, _ := out["GameServer"].(map[string]any)
	if gs == nil || gs["GameServerId"] != "mega-frog-game-12345678" || gs["InstanceId"] != "i-1234567890abcdef0" {
		t.Fatalf("GameServer %v", out)
	}
	n, ok := gs["RegistrationTime"].(json.Number)
	if !ok || !regexp.MustCompile(`^\d{10}(\.\d{1,3})?$`).MatchString(n.String()) {
		t.Errorf("RegistrationTime %v (%T) is not epoch seconds with up to 3 decimals", gs["RegistrationTime"], gs["RegistrationTime"])
	}
	f, _ := n.Float64()
	if ts := time.UnixMilli(int64(math.Round(f * 1000))); ts.Before(before.Add(-time.Second)) || ts.After(time.Now().Add(time.Second)) {
		t.Errorf("RegistrationTime %s is not now", ts)
	}
	for _, absent := range []string{"LastClaimTime"} {
		if _, ok := gs[absent]; ok {
			t.Errorf("%s is present (%v) though the game server has none", absent, gs[absent])
		}
	}
	// An operation without output answers {}.
	r = jsonCall(t, h, "DeregisterGameServer", []byte(`{"GameServerGroupName":"MegaFrogServers_NA","GameServerId":"mega-frog-game-12345678"}`), rawOpts{})
	checkCommon(t, "json", r, seen)
	if r.Status != 200 || strings.TrimSpace(string(r.Body)) != "{}" {
		t.Errorf("DeregisterGameServer: HTTP %d %q, want 200 {}", r.Status, r.Body)
	}
	// Fractions appear: the group's CreationTime or a later timestamp of
	// some record is almost never a whole second; check a list of them.
	r = jsonCall(t, h, "ListGameServerGroups", []byte(`{}`), rawOpts{})
	checkCommon(t, "json", r, seen)
	if !regexp.MustCompile(`"CreationTime":\d{10}(\.\d{1,3})?[,}]`).Match(r.Body) {
		t.Errorf("ListGameServerGroups: CreationTime not epoch seconds: %s", r.Body)
	}
}

// TestWireSuccessCBOR: the same through RPC v2 CBOR: CBOR content type,
// timestamps as tag 1 around an integer or a float64, no null or undefined,
// absent members omitted; an operation without output has no body.
func TestWireSuccessCBOR(t *testing.T) {
	h := startHoist(t)
	seen := map[string]bool{}
	setupGroup(t, h)
	r := cborCall(t, h, "RegisterGameServer", mustCBOR(t, map[string]any{"GameServerGroupName": seedGroup,
		"GameServerId": "mega-frog-game-12345678", "InstanceId": "i-1234567890abcdef0", "ConnectionInfo": "192.0.2.0.80"}), rawOpts{})
	checkCommon(t, "cbor", r, seen)
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/cbor" {
		t.Fatalf("HTTP %d %q: %x", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	var generic map[string]any
	if err := cbor.Unmarshal(r.Body, &generic); err != nil {
		t.Fatal(err)
	}
	noNulls(t, "", generic)
	var out struct {
		GameServer map[string]cbor.RawMessage
	}
	if err := cbor.Unmarshal(r.Body, &out); err != nil {
		t.Fatal(err)
	}
	var id string
	if err := cbor.Unmarshal(out.GameServer["GameServerId"], &id); err != nil || id != "mega-frog-game-12345678" {
		t.Errorf("GameServerId %q %v", id, err)
	}
	raw := out.GameServer["RegistrationTime"]
	var tag cbor.RawTag
	if err := cbor.Unmarshal(raw, &tag); err != nil || tag.Number != 1 {
		t.Fatalf("RegistrationTime %x is not CBOR tag 1: %v", []byte(raw), err)
	}
	if c := tag.Content; len(c) == 0 || !(c[0]>>5 == 0 || c[0] == 0xfb) {
		t.Errorf("RegistrationTime's tag 1 holds %x: want an unsigned integer or a float64", []byte(c))
	}
	var secs float64
	if err := cbor.Unmarshal(tag.Content, &secs); err != nil || math.Abs(secs-float64(time.Now().UnixMilli())/1000) > 60 {
		t.Errorf("RegistrationTime %v is not now (%v)", secs, err)
	}
	for _, absent := range []string{"LastClaimTime"} {
		if _, ok := out.GameServer[absent]; ok {
			t.Errorf("%s is present though the game server has none", absent)
		}
	}
	r = cborCall(t, h, "DeregisterGameServer", mustCBOR(t, map[string]any{"GameServerGroupName": seedGroup,
		"GameServerId": "mega-frog-game-12345678"}), rawOpts{})
	checkCommon(t, "cbor", r, seen)
	if r.Status != 200 || len(r.Body) != 0 {
		var v any
		_ = cbor.Unmarshal(r.Body, &v)
		if r.Status != 200 || len(v.(map[any]any)) != 0 {
			t.Errorf("DeregisterGameServer (no output): HTTP %d body %x, want 200 and no body or an empty map", r.Status, r.Body)
		}
	}
	// A modeled error in CBOR: __type is the shape ID, message and Message.
	r = cborCall(t, h, "DescribeGameServer", mustCBOR(t, map[string]any{"GameServerGroupName": seedGroup, "GameServerId": "nope-1"}), rawOpts{})
	wantError(t, "cbor", r, 400, "NotFoundException", seen)
	var eb map[string]any
	_ = cbor.Unmarshal(r.Body, &eb)
	if eb["__type"] != "com.amazonaws.gamelift#NotFoundException" || eb["message"] == nil || eb["Message"] != eb["message"] {
		t.Errorf("CBOR modeled error body %v", eb)
	}
	// The same in JSON: bare code, x-amzn-ErrorType.
	r = jsonCall(t, h, "DescribeGameServer", mustJSON(t, map[string]any{"GameServerGroupName": seedGroup, "GameServerId": "nope-1"}), rawOpts{})
	wantError(t, "json", r, 400, "NotFoundException", seen)
	if et := r.Header.Get("X-Amzn-ErrorType"); et != "NotFoundException" {
		t.Errorf("x-amzn-ErrorType %q", et)
	}
}

// TestWireProtocolErrors: requests the protocol refuses are answered 4xx in
// the protocol's error form, never 500.
func TestWireProtocolErrors(t *testing.T) {
	h := startHoist(t)
	seen := map[string]bool{}
	big := bytes.Repeat([]byte(" "), 10<<20+1)
	big[0] = '{'
	big[len(big)-1] = '}'
	bigCBOR := mustCBOR(t, map[string]any{"GameServerGroupName": "g", "GameServerData": strings.Repeat("x", 10<<20)})
	tests := []struct {
		name   string
		proto  string
		do     func() rawResponse
		status int
		code   string
	}{
		{"malformed JSON", "json", func() rawResponse {
			return jsonCall(t, h, "ListGameServerGroups", []byte(`{"Limit": 1,`), rawOpts{})
		}, 400, "SerializationException"},
		{"JSON body not an object", "json", func() rawResponse {
			return jsonCall(t, h, "ListGameServerGroups", []byte(`[1,2]`), rawOpts{})
		}, 400, "SerializationException"},
		{"malformed CBOR", "cbor", func() rawResponse {
			return cborCall(t, h, "ListGameServerGroups", []byte{0xa1, 0x65, 'L', 'i', 'm'}, rawOpts{})
		}, 400, "SerializationException"},
		{"CBOR body not a map", "cbor", func() rawResponse {
			return cborCall(t, h, "ListGameServerGroups", []byte{0x83, 1, 2, 3}, rawOpts{})
		}, 400, "SerializationException"},
		{"unknown operation, JSON", "json", func() rawResponse {
			return jsonCall(t, h, "LaunchRocket", []byte(`{}`), rawOpts{})
		}, 400, "UnknownOperationException"},
		{"unknown operation, CBOR", "cbor", func() rawResponse {
			return cborCall(t, h, "LaunchRocket", mustCBOR(t, map[string]any{}), rawOpts{})
		}, 400, "UnknownOperationException"},
		{"missing X-Amz-Target", "json", func() rawResponse {
			return jsonCall(t, h, "ListGameServerGroups", []byte(`{}`), rawOpts{headers: map[string]string{"X-Amz-Target": ""}})
		}, 400, "UnknownOperationException"},
		{"another service's X-Amz-Target", "json", func() rawResponse {
			return jsonCall(t, h, "ListGameServerGroups", []byte(`{}`), rawOpts{headers: map[string]string{"X-Amz-Target": "DynamoDB_20120810.ListTables"}})
		}, 400, "UnknownOperationException"},
		{"unknown path, CBOR form", "cbor", func() rawResponse {
			return doRaw(t, h, "/service/GameLift/nothing", mustCBOR(t, map[string]any{}), rawOpts{contentType: str("application/cbor"),
				headers: map[string]string{"smithy-protocol": "rpc-v2-cbor"}})
		}, 404, "UnknownOperationException"},
		{"unknown path, JSON form", "json", func() rawResponse {
			return doRaw(t, h, "/no/such/route", []byte(`{}`), rawOpts{contentType: str("application/x-amz-json-1.1")})
		}, 404, "UnknownOperationException"},
		{"wrong Content-Type, JSON", "json", func() rawResponse {
			return jsonCall(t, h, "ListGameServerGroups", []byte(`{}`), rawOpts{contentType: str("text/plain")})
		}, 415, "UnsupportedMediaTypeException"},
		{"wrong Content-Type, CBOR", "cbor", func() rawResponse {
			return cborCall(t, h, "ListGameServerGroups", mustCBOR(t, map[string]any{}), rawOpts{contentType: str("application/json")})
		}, 415, "UnsupportedMediaTypeException"},
		{"wrong smithy-protocol", "cbor", func() rawResponse {
			return cborCall(t, h, "ListGameServerGroups", mustCBOR(t, map[string]any{}), rawOpts{headers: map[string]string{"smithy-protocol": "rpc-v3-xml"}})
		}, 415, "UnsupportedMediaTypeException"},
		{"X-Amz-Target on CBOR", "cbor", func() rawResponse {
			return cborCall(t, h, "ListGameServerGroups", mustCBOR(t, map[string]any{}), rawOpts{headers: map[string]string{"X-Amz-Target": "GameLift.ListGameServerGroups"}})
		}, 400, "SerializationException"},
		{"oversized body, JSON", "json", func() rawResponse {
			return streamCall(t, h, "json", "ListGameServerGroups", big, false)
		}, 413, "RequestEntityTooLargeException"},
		{"oversized body, CBOR", "cbor", func() rawResponse {
			return streamCall(t, h, "cbor", "UpdateGameServer", bigCBOR, false)
		}, 413, "RequestEntityTooLargeException"},
		{"oversized chunked body, JSON", "json", func() rawResponse {
			return streamCall(t, h, "json", "ListGameServerGroups", big, true)
		}, 413, "RequestEntityTooLargeException"},
		{"oversized chunked body, CBOR", "cbor", func() rawResponse {
			return streamCall(t, h, "cbor", "UpdateGameServer", bigCBOR, true)
		}, 413, "RequestEntityTooLargeException"},
		{"GET instead of POST, JSON", "json", func() rawResponse {
			return jsonCall(t, h, "ListGameServerGroups", nil, rawOpts{method: http.MethodGet, contentType: str("")})
		}, 405, "MethodNotAllowedException"},
		{"GET instead of POST, CBOR", "cbor", func() rawResponse {
			return cborCall(t, h, "ListGameServerGroups", nil, rawOpts{method: http.MethodGet, contentType: str("")})
		}, 405, "MethodNotAllowedException"},
		{"PUT instead of POST, CBOR", "cbor", func() rawResponse {
			return cborCall(t, h, "ListGameServerGroups", mustCBOR(t, map[string]any{}), rawOpts{method: http.MethodPut})
		}, 405, "MethodNotAllowedException"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.do()
			msg := wantError(t, tc.proto, r, tc.status, tc.code, seen)
			if tc.status == 405 && r.Header.Get("Allow") != "POST" {
				t.Errorf("405 without Allow: POST (%q)", r.Header.Get("Allow"))
			}
			t.Logf("HTTP %d %s: %s", r.Status, tc.code, msg)
		})
	}
	// Hoist still serves after all of that.
	r := jsonCall(t, h, "ListGameServerGroups", []byte(`{}`), rawOpts{})
	checkCommon(t, "json", r, seen)
	if r.Status != 200 {
		t.Errorf("after the refusals: HTTP %d %s", r.Status, r.Body)
	}
}

// TestWireAuthentication: requests without a valid signature are answered
// as AWS answers them, in each protocol's error form, and through both SDKs.
func TestWireAuthentication(t *testing.T) {
	h := startHoist(t)
	seen := map[string]bool{}
	body := map[string]any{"GameServerGroupName": seedGroup}
	for _, proto := range []string{"json", "cbor"} {
		call := func(o rawOpts) rawResponse {
			if proto == "json" {
				return jsonCall(t, h, "DescribeGameServerGroup", mustJSON(t, body), o)
			}
			return cborCall(t, h, "DescribeGameServerGroup", mustCBOR(t, body), o)
		}
		t.Run(proto, func(t *testing.T) {
			tests := []struct {
				name   string
				o      rawOpts
				status int
				code   string
			}{
				{"unsigned", rawOpts{unsigned: true}, 403, "MissingAuthenticationTokenException"},
				{"wrong secret", rawOpts{secret: "not-the-secret", akid: hoisttest.AccessKeyID}, 403, "InvalidSignatureException"},
				{"signed header changed after signing", rawOpts{tamper: func(r *http.Request) {
					r.Header.Set("X-Amz-Date", time.Now().UTC().Add(time.Second).Format("20060102T150405Z"))
				}}, 403, "InvalidSignatureException"},
				{"unknown access key", rawOpts{akid: "AKIDNOBODYKNOWS", secret: "whatever"}, 400, "UnrecognizedClientException"},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					wantError(t, proto, call(tc.o), tc.status, tc.code, seen)
				})
			}
			// A correctly signed request passes authentication.
			r := call(rawOpts{})
			checkCommon(t, proto, r, seen)
			if code, msg := errorOf(t, proto, r); r.Status != 200 && code != "NotFoundException" {
				t.Errorf("signed request: HTTP %d %s %s", r.Status, code, msg)
			}
		})
	}
	// Through the SDKs: a wrong secret and an unknown key.
	ctx := hoisttest.Context(t, time.Minute)
	for _, k := range []struct{ akid, secret, code string }{
		{hoisttest.AccessKeyID, "not-the-secret", "InvalidSignatureException"},
		{"AKIDNOBODYKNOWS", "whatever", "UnrecognizedClientException"},
	} {
		_, err := newV2Keys(h, k.akid, k.secret).ListGameServerGroups(ctx, &glv2.ListGameServerGroupsInput{})
		if o := v2Outcome(err); o.code != k.code {
			t.Errorf("aws-sdk-go-v2 with key %s: %s, want %s", k.akid, o, k.code)
		}
		_, err = hoisttest.NewV1(h.URL, k.akid, k.secret).ListGameServerGroupsWithContext(ctx, &glv1.ListGameServerGroupsInput{})
		if o := v1Outcome(err); o.code != k.code {
			t.Errorf("aws-sdk-go v1 with key %s: %s, want %s", k.akid, o, k.code)
		}
	}
}

// streamCall sends a signed request over its own connection, writing the
// body (with Content-Length, or chunked) while it reads the answer: a
// server refusing a large body may answer and close before the body is
// all written, and the answer is what counts.
func streamCall(t testing.TB, h *hoisttest.Hoist, proto, op string, body []byte, chunked bool) rawResponse {
	t.Helper()
	path, hdr := "/", map[string]string{"X-Amz-Target": "GameLift." + op, "Content-Type": "application/x-amz-json-1.1"}
	if proto == "cbor" {
		path, hdr = "/service/GameLift/operation/"+op, map[string]string{"smithy-protocol": "rpc-v2-cbor", "Content-Type": "application/cbor"}
	}
	req, err := http.NewRequest(http.MethodPost, h.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	signRequest(t, req, body, hoisttest.AccessKeyID, hoisttest.SecretAccessKey)
	if chunked {
		req.ContentLength = -1
		req.TransferEncoding = []string{"chunked"}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() { _ = req.Write(conn) }() // fails once the server closes: fine
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("reading the answer to a %d-byte body: %v", len(body), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}
}
