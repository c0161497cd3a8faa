package protocol

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// jsonHeaders are the headers boto3 sends for op.
func jsonHeaders(op string) map[string]string {
	return map[string]string{"X-Amz-Target": "GameLift." + op, "Content-Type": "application/x-amz-json-1.1", "Authorization": "ok"}
}

func with(h map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(h)+len(kv)/2)
	for k, v := range h {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
			continue
		}
		out[kv[i]] = kv[i+1]
	}
	return out
}

// checkJSONResponse checks what every AWS JSON 1.1 response carries.
func checkJSONResponse(t *testing.T, r rawResponse) {
	t.Helper()
	if id := r.Header.Get("x-amzn-RequestId"); len(id) != 36 {
		t.Errorf("x-amzn-RequestId = %q, want a UUID", id)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		t.Errorf("Content-Type = %q", ct)
	}
	if r.Header.Get("smithy-protocol") != "" {
		t.Errorf("JSON response carries smithy-protocol")
	}
	if !json.Valid(r.Body) {
		t.Errorf("body is not JSON: %q", r.Body)
	}
}

// checkJSONError checks an AWS JSON 1.1 error: status, x-amzn-ErrorType,
// and a body of exactly __type and message.
func checkJSONError(t *testing.T, r rawResponse, status int, code, msgPart string) {
	t.Helper()
	checkJSONResponse(t, r)
	if r.Status != status {
		t.Errorf("status = %d, want %d (body %s)", r.Status, status, r.Body)
	}
	if got := r.Header.Get("x-amzn-ErrorType"); got != code {
		t.Errorf("x-amzn-ErrorType = %q, want %q", got, code)
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("error body %q: %v", r.Body, err)
	}
	if len(body) != 2 || body["__type"] != code {
		t.Errorf("error body = %s, want __type %q and message only", r.Body, code)
	}
	if msg, _ := body["message"].(string); !strings.Contains(msg, msgPart) {
		t.Errorf("message = %q, want it to contain %q", msg, msgPart)
	}
}

func TestJSONSuccess(t *testing.T) {
	s := newTestServer(t, Options{Auth: fakeAuth{}})
	tests := map[string]struct {
		op, body, want, auth string
	}{
		"describe: absent members omitted, timestamps as epoch seconds": {
			op:   "DescribeGameServer",
			body: `{"GameServerGroupName":"group-1","GameServerId":"gs-1"}`,
			want: `{"GameServer":{"ClaimStatus":"CLAIMED","ConnectionInfo":"127.0.0.1:7777","GameServerGroupName":"group-1",` +
				`"GameServerId":"gs-1","InstanceId":"i-1234567890abcdef0","LastClaimTime":1580218200,` +
				`"RegistrationTime":1580218197.293,"UtilizationStatus":"AVAILABLE"}}`,
		},
		"list": {
			op:   "ListGameServers",
			body: `{"GameServerGroupName":"group-1","Limit":2}`,
			want: `{"GameServers":[` + gsJSON("gs-1") + `,` + gsJSON("gs-2") + `],"NextToken":"token-2"}`,
		},
		"no output shape": {op: "DeleteAlias", body: `{"AliasId":"alias-1234"}`, want: `{}`},
		"nil output":      {op: "DescribeGameServer", body: `{"GameServerGroupName":"g","GameServerId":"gs-nil-output"}`, want: `{}`},
		"timestamp in: number with fraction, unknown member ignored, trailing space": {
			op:   "DescribeFleetEvents",
			body: " {\"FleetId\":\"fleet-1\",\"StartTime\":1580218197.293,\"Limit\":5,\"NoSuchMember\":[1,{}]}\n\t",
			want: `{"Events":[{"Count":5,"EventId":"ev-1","EventTime":1580218197.293}]}`,
		},
		"timestamp in: RFC 3339 string": {
			op:   "DescribeFleetEvents",
			body: `{"FleetId":"fleet-1","StartTime":"2020-01-28T13:29:57.293Z"}`,
			want: `{"Events":[{"EventId":"ev-1","EventTime":1580218197.293}]}`,
		},
		"blob in: base64": {
			op:   "CreateScript",
			body: `{"Name":"s","ZipFile":"UEsDBAoAAAAAAA=="}`,
			want: `{"Script":{"Name":"s","SizeOnDisk":10,"Version":"504b03040a000000"}}`,
		},
		"authenticator returns no context": {
			op:   "DeleteAlias",
			body: `{"AliasId":"alias-1234"}`,
			want: `{}`,
			auth: "nil-context",
		},
		"caller context and request ID reach the service": {
			op:   "DescribeGameServer",
			body: `{"GameServerGroupName":"g","GameServerId":"gs-ctx"}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			header := jsonHeaders(tc.op)
			if tc.auth != "" {
				header["Authorization"] = tc.auth
			}
			r := s.do(t, "POST", "/", header, strings.NewReader(tc.body))
			checkJSONResponse(t, r)
			if r.Status != 200 {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			if r.Header.Get("x-amzn-ErrorType") != "" {
				t.Errorf("success carries x-amzn-ErrorType")
			}
			if tc.want != "" && string(r.Body) != tc.want {
				t.Errorf("body\n got %s\nwant %s", r.Body, tc.want)
			}
			if strings.Contains(string(r.Body), "null") {
				t.Errorf("body has a null: %s", r.Body)
			}
			if tc.op == "DescribeGameServer" && strings.Contains(tc.body, "gs-ctx") {
				want := "caller(" + strconv.Itoa(len(tc.body)) + " bytes)|" + r.Header.Get("x-amzn-RequestId")
				var out struct {
					GameServer struct{ GameServerData string }
				}
				_ = json.Unmarshal(r.Body, &out)
				if out.GameServer.GameServerData != want {
					t.Errorf("service saw %q, want %q", out.GameServer.GameServerData, want)
				}
			}
		})
	}
}

func gsJSON(id string) string {
	return `{"ClaimStatus":"CLAIMED","ConnectionInfo":"127.0.0.1:7777","GameServerGroupName":"group-1",` +
		`"GameServerId":"` + id + `","InstanceId":"i-1234567890abcdef0","LastClaimTime":1580218200,` +
		`"RegistrationTime":1580218197.293,"UtilizationStatus":"AVAILABLE"}`
}

func TestJSONErrors(t *testing.T) {
	s := newTestServer(t, Options{Auth: fakeAuth{}, MaxBodyBytes: 1024})
	describe := jsonHeaders("DescribeGameServer")
	okBody := `{"GameServerGroupName":"group-1","GameServerId":"gs-1"}`
	tests := map[string]struct {
		method, path string
		header       map[string]string
		body         io.Reader
		status       int
		code, msg    string
	}{
		"unknown operation":        {header: jsonHeaders("LaunchRocket"), body: strings.NewReader(`{}`), status: 400, code: CodeUnknownOperation, msg: `"LaunchRocket" is not a GameLift operation`},
		"missing X-Amz-Target":     {header: with(describe, "X-Amz-Target", ""), body: strings.NewReader(okBody), status: 400, code: CodeUnknownOperation, msg: "X-Amz-Target header is missing"},
		"other service in target":  {header: with(describe, "X-Amz-Target", "DynamoDB_20120810.GetItem"), body: strings.NewReader(`{}`), status: 400, code: CodeUnknownOperation, msg: "does not name a GameLift operation"},
		"GET":                      {method: "GET", header: describe, status: 405, code: CodeMethodNotAllowed, msg: "POST only, not GET"},
		"PUT":                      {method: "PUT", header: describe, body: strings.NewReader(okBody), status: 405, code: CodeMethodNotAllowed, msg: "not PUT"},
		"unknown path":             {path: "/gamelift", header: describe, body: strings.NewReader(okBody), status: 404, code: CodeUnknownOperation, msg: `no GameLift API route at "/gamelift"`},
		"text/plain":               {header: with(describe, "Content-Type", "text/plain"), body: strings.NewReader(okBody), status: 415, code: CodeUnsupportedMediaType, msg: `Content-Type "text/plain"`},
		"CBOR content type":        {header: with(describe, "Content-Type", "application/cbor"), body: strings.NewReader(okBody), status: 415, code: CodeUnsupportedMediaType, msg: "application/x-amz-json-1.1"},
		"no content type, a body":  {header: with(describe, "Content-Type", ""), body: strings.NewReader(okBody), status: 415, code: CodeUnsupportedMediaType, msg: `Content-Type ""`},
		"too large, known length":  {header: describe, body: strings.NewReader(`{"GameServerId":"` + strings.Repeat("x", 2000) + `"}`), status: 413, code: CodeRequestTooLarge, msg: "larger than 1024 bytes"},
		"too large, chunked":       {header: describe, body: io.MultiReader(strings.NewReader(`{"GameServerId":"`), strings.NewReader(strings.Repeat("x", 2000))), status: 413, code: CodeRequestTooLarge, msg: "larger than 1024 bytes"},
		"syntax error":             {header: describe, body: strings.NewReader(`{"GameServerId":`), status: 400, code: CodeSerialization, msg: "malformed JSON at byte offset"},
		"trailing garbage":         {header: describe, body: strings.NewReader(okBody + `x`), status: 400, code: CodeSerialization, msg: "after top-level value"},
		"second object":            {header: describe, body: strings.NewReader(okBody + `{}`), status: 400, code: CodeSerialization, msg: "malformed JSON"},
		"array body":               {header: describe, body: strings.NewReader(`[]`), status: 400, code: CodeSerialization, msg: "must be a JSON object"},
		"null body":                {header: describe, body: strings.NewReader(`null`), status: 400, code: CodeSerialization, msg: "must be a JSON object"},
		"string for integer":       {header: jsonHeaders("ListGameServers"), body: strings.NewReader(`{"GameServerGroupName":"g","Limit":"ten"}`), status: 400, code: CodeSerialization, msg: "member Limit: expected an integer, got a JSON string"},
		"fraction for integer":     {header: jsonHeaders("ListGameServers"), body: strings.NewReader(`{"GameServerGroupName":"g","Limit":1.5}`), status: 400, code: CodeSerialization, msg: "member Limit: expected an integer"},
		"integer overflow":         {header: jsonHeaders("ListGameServers"), body: strings.NewReader(`{"GameServerGroupName":"g","Limit":4294967296}`), status: 400, code: CodeSerialization, msg: "member Limit"},
		"number for string":        {header: describe, body: strings.NewReader(`{"GameServerGroupName":"g","GameServerId":7}`), status: 400, code: CodeSerialization, msg: "member GameServerId: expected a string, got a JSON number"},
		"object for list":          {header: jsonHeaders("ClaimGameServer"), body: strings.NewReader(`{"GameServerGroupName":"g","FilterOption":{"InstanceStatuses":{}}}`), status: 400, code: CodeSerialization, msg: "member FilterOption.InstanceStatuses: expected a list, got a JSON object"},
		"bad timestamp":            {header: jsonHeaders("DescribeFleetEvents"), body: strings.NewReader(`{"FleetId":"fleet-1","StartTime":true}`), status: 400, code: CodeSerialization, msg: "timestamp"},
		"bad base64":               {header: jsonHeaders("CreateScript"), body: strings.NewReader(`{"ZipFile":"!!"}`), status: 400, code: CodeSerialization, msg: "not valid base64"},
		"validation: empty body":   {header: jsonHeaders("ListGameServers"), status: 400, code: "InvalidRequestException", msg: "Value null at 'GameServerGroupName' failed to satisfy constraint: Member must not be null"},
		"validation: length":       {header: describe, body: strings.NewReader(`{"GameServerGroupName":"g","GameServerId":"ab"}`), status: 400, code: "InvalidRequestException", msg: "'GameServerId' failed to satisfy constraint: Member must have length greater than or equal to 3"},
		"modeled error":            {header: describe, body: strings.NewReader(`{"GameServerGroupName":"g","GameServerId":"gs-missing"}`), status: 400, code: "NotFoundException", msg: "game server gs-missing does not exist"},
		"wrapped modeled error":    {header: describe, body: strings.NewReader(`{"GameServerGroupName":"g","GameServerId":"gs-wrapped"}`), status: 400, code: "NotFoundException", msg: "game server gs-wrapped does not exist"},
		"conflict":                 {header: jsonHeaders("ClaimGameServer"), body: strings.NewReader(`{"GameServerGroupName":"g","GameServerId":"gs-1"}`), status: 400, code: "ConflictException", msg: "gs-1 is already claimed"},
		"not implemented":          {header: jsonHeaders("CreateAlias"), body: strings.NewReader(`{"Name":"a","RoutingStrategy":{"Type":"TERMINAL","Message":"m"}}`), status: 501, code: "UnsupportedOperationException", msg: "does not implement the GameLift operation CreateAlias"},
		"service panics":           {header: describe, body: strings.NewReader(`{"GameServerGroupName":"g","GameServerId":"gs-panic"}`), status: 500, code: "InternalServiceException", msg: "internal error (request ID "},
		"service fails":            {header: describe, body: strings.NewReader(`{"GameServerGroupName":"g","GameServerId":"gs-internal"}`), status: 500, code: "InternalServiceException", msg: "internal error (request ID "},
		"typed nil error":          {header: describe, body: strings.NewReader(`{"GameServerGroupName":"g","GameServerId":"gs-typed-nil"}`), status: 500, code: "InternalServiceException", msg: "internal error"},
		"output cannot be encoded": {header: jsonHeaders("DescribeScalingPolicies"), body: strings.NewReader(`{"FleetId":"fleet-1"}`), status: 500, code: "InternalServiceException", msg: "internal error"},
		"auth rejects":             {header: with(describe, "Authorization", "bad"), body: strings.NewReader(okBody), status: 403, code: "UnrecognizedClientException", msg: "security token"},
		"auth fails":               {header: with(describe, "Authorization", "broken"), body: strings.NewReader(okBody), status: 500, code: "InternalServiceException", msg: "internal error"},
		"auth panics":              {header: with(describe, "Authorization", "panic"), body: strings.NewReader(okBody), status: 500, code: "InternalServiceException", msg: "internal error"},
		"auth before operation":    {header: with(jsonHeaders("LaunchRocket"), "Authorization", "bad"), body: strings.NewReader(`{}`), status: 403, code: "UnrecognizedClientException", msg: "security token"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			method, path := tc.method, tc.path
			if method == "" {
				method = "POST"
			}
			if path == "" {
				path = "/"
			}
			r := s.do(t, method, path, tc.header, tc.body)
			checkJSONError(t, r, tc.status, tc.code, tc.msg)
			if tc.status == 405 && r.Header.Get("Allow") != "POST" {
				t.Errorf("Allow = %q", r.Header.Get("Allow"))
			}
			if tc.status == 500 && !strings.Contains(string(r.Body), r.Header.Get("x-amzn-RequestId")) {
				t.Errorf("internal error does not name the request ID: %s", r.Body)
			}
		})
	}
	logs := s.logs.String()
	for _, want := range []string{"database is on fire", "the game server table is gone", "goroutine", "key store unavailable", "json: unsupported value: NaN"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q", want)
		}
	}
}

// TestJSONContentTypes: both JSON media types, parameters and case are
// accepted, and an empty body needs no Content-Type.
func TestJSONContentTypes(t *testing.T) {
	s := newTestServer(t, Options{})
	body := `{"GameServerGroupName":"g","GameServerId":"gs-1"}`
	for _, ct := range []string{"application/x-amz-json-1.1", "application/json", "Application/JSON; charset=utf-8", "application/x-amz-json-1.1 ;charset=UTF-8"} {
		r := s.do(t, "POST", "/", with(jsonHeaders("DescribeGameServer"), "Content-Type", ct), strings.NewReader(body))
		if r.Status != 200 {
			t.Errorf("Content-Type %q: status %d %s", ct, r.Status, r.Body)
		}
	}
	r := s.do(t, "POST", "/", with(jsonHeaders("ListGameServers"), "Content-Type", ""), nil)
	checkJSONError(t, r, 400, "InvalidRequestException", "GameServerGroupName")
}

func TestRequestIDOption(t *testing.T) {
	s := newTestServer(t, Options{Auth: fakeAuth{}, RequestID: func() string { return "req-fixed" }})
	r := s.do(t, "POST", "/", jsonHeaders("DescribeGameServer"), strings.NewReader(`{"GameServerGroupName":"g","GameServerId":"gs-ctx"}`))
	if got := r.Header.Get("x-amzn-RequestId"); got != "req-fixed" {
		t.Errorf("x-amzn-RequestId = %q", got)
	}
	if !strings.Contains(string(r.Body), "|req-fixed") {
		t.Errorf("the service did not see the request ID: %s", r.Body)
	}
	r = s.do(t, "GET", "/nowhere", nil, nil)
	if r.Status != http.StatusNotFound || r.Header.Get("x-amzn-RequestId") != "req-fixed" {
		t.Errorf("404: status %d, request ID %q", r.Status, r.Header.Get("x-amzn-RequestId"))
	}
}
